package dev.idem.testsupport;

import java.util.concurrent.Callable;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.remoting.exception.RemotingException;
import org.apache.rocketmq.remoting.exception.RemotingSendRequestException;

/**
 * A send to one queue, stored once. The client does not retry a send to a selected queue, and it fails one with
 * {@link RemotingSendRequestException} when the request could not be written because the channel closed meanwhile
 * (the client closes a broker channel on which any request, a heartbeat included, timed out: seen on a loaded
 * machine); and before any request, it throws an {@link IllegalStateException} caused by a {@link RemotingException}
 * when the name server did not answer its route lookup (seen in CI). Neither reached the broker, so the send is made
 * again; every other failure is the caller's, since a request that was written may have been stored, and a caller
 * that counts copies must not add one.
 */
public final class RocketMQSend {
    static final int MAX_SENDS_AGAIN = 5;

    private RocketMQSend() {}

    /**
     * Sends {@code message} to queue number {@code queue} (modulo the topic's queues); fails unless the broker answers
     * SEND_OK.
     */
    public static SendResult toQueue(DefaultMQProducer producer, Message message, int queue) throws Exception {
        return untilWritten(
                () -> producer.send(message, (queues, msg, arg) -> queues.get((Integer) arg % queues.size()), queue));
    }

    /** Runs {@code send} again while it never reached the broker; fails unless the broker answers SEND_OK. */
    static SendResult untilWritten(Callable<SendResult> send) throws Exception {
        for (int again = 0; ; again++) {
            try {
                SendResult result = send.call();
                if (result.getSendStatus() != SendStatus.SEND_OK) {
                    throw new IllegalStateException("send not stored: " + result);
                }
                return result;
            } catch (RemotingSendRequestException | IllegalStateException e) {
                boolean neverSent = e instanceof RemotingSendRequestException || isRouteLookupFailure(e);
                if (!neverSent || again == MAX_SENDS_AGAIN) {
                    throw e;
                }
            }
        }
    }

    /**
     * Whether {@code failure} is the client's route lookup that the name server did not answer: thrown before any
     * request, so nothing was sent.
     */
    public static boolean isRouteLookupFailure(Exception failure) {
        return failure instanceof IllegalStateException && failure.getCause() instanceof RemotingException;
    }
}
