package dev.idem.rocketmq;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DeadLetterException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.Test;

/**
 * The dead-letter copy carrying the reason cannot be written (here: its producer is not started): the message is
 * retried, not sent to {@code %DLQ%} by RocketMQ's send-back without the reason. No broker: the listener is called
 * directly.
 */
class DeadLetterCopyFailureTest {

    /** Records the send-backs instead of calling a broker. */
    static final class RecordingConsumer extends DefaultMQPushConsumer {
        final List<Integer> sentBackWithLevel = new CopyOnWriteArrayList<>();

        RecordingConsumer() {
            super("copy-failure-group");
        }

        @Override
        @SuppressWarnings("deprecation")
        public void sendMessageBack(MessageExt message, int delayLevel, String brokerName) {
            sentBackWithLevel.add(delayLevel);
        }
    }

    @Test
    void concurrent_copyWithTheReasonNotWritten_retriesTheMessage_noReasonlessDeadLetter() {
        RecordingConsumer consumer = new RecordingConsumer();
        var listener = IdempotentRocketMQ.builder(consumer)
                .producer(new DefaultMQProducer("never-started"))
                .keyFrom(KeyExtractor.keys())
                .handler((key, message) -> {
                    throw new DeadLetterException("amount is not a number", null);
                })
                .build()
                .concurrently();
        MessageExt message = new MessageExt();
        message.setTopic("payments");
        message.setKeys("10086:PAY");
        message.setBody("x".getBytes(StandardCharsets.UTF_8));

        ConsumeConcurrentlyStatus status = listener.consumeMessage(
                List.of(message), new ConsumeConcurrentlyContext(new MessageQueue("payments", "broker-a", 0)));

        assertThat(status).isEqualTo(ConsumeConcurrentlyStatus.RECONSUME_LATER);
        assertThat(consumer.sentBackWithLevel).as("send-backs").isEmpty();
    }
}
