package dev.idem.testsupport;

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.remoting.exception.RemotingSendRequestException;

/**
 * A test's send to one queue, stored once. The client does not retry a send to a selected queue, and it fails one
 * with {@link RemotingSendRequestException} when the request could not be written because the channel closed
 * meanwhile (the client closes a broker channel on which any request, a heartbeat included, timed out: seen on a
 * loaded machine). Such a request never reached the broker, so it is sent again; every other failure is the test's.
 */
public final class RocketMQSend {
    private static final int MAX_SENDS_AGAIN = 5;

    private RocketMQSend() {}

    /** Sends {@code message} to queue number {@code queue} of its topic; fails unless the broker answers SEND_OK. */
    public static SendResult toQueue(DefaultMQProducer producer, Message message, int queue) throws Exception {
        for (int again = 0; ; again++) {
            try {
                SendResult result = producer.send(message, (queues, msg, arg) -> queues.get((Integer) arg), queue);
                if (result.getSendStatus() != SendStatus.SEND_OK) {
                    throw new IllegalStateException("send to " + message.getTopic() + " not stored: " + result);
                }
                return result;
            } catch (RemotingSendRequestException notWritten) {
                if (again == MAX_SENDS_AGAIN) {
                    throw notWritten;
                }
            }
        }
    }
}
