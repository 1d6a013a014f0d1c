package dev.idem.rocketmq;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Outcome;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The orderly listener counts the handler's attempts in a property of the message object, and a producer can set
 * that property too: whatever it holds, the listener decides (retry or dead letter) and never throws, which would
 * leave RocketMQ suspending the queue on that message for ever. No broker: the listener is called directly.
 */
class HostileMessageTest {

    @ParameterizedTest
    @ValueSource(strings = {"abc", "-5", "2147483647", "99999999999"})
    void orderly_attemptsPropertySetByTheProducer_neverThrows(String tampered) {
        AtomicInteger handled = new AtomicInteger();
        var listener = alwaysFailing(handled);
        MessageExt message = payment();
        MessageAccessor.putProperty(message, IdempotentRocketMQ.HANDLER_ATTEMPTS, tampered);

        ConsumeOrderlyStatus status = listener.consumeMessage(
                List.of(message), new ConsumeOrderlyContext(new MessageQueue("payments", "broker-a", 0)));

        assertThat(status).isEqualTo(ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT);
        assertThat(handled).hasValue(1);
    }

    @Test
    void orderly_untamperedCount_growsByOneAttemptPerSuspension() {
        var listener = alwaysFailing(new AtomicInteger());
        MessageExt message = payment();
        var context = new ConsumeOrderlyContext(new MessageQueue("payments", "broker-a", 0));
        listener.consumeMessage(List.of(message), context);
        listener.consumeMessage(List.of(message), context);
        assertThat(message.getProperty(IdempotentRocketMQ.HANDLER_ATTEMPTS)).isEqualTo("2");
    }

    @Test
    void orderly_deadLetteredMarkSetByTheProducer_doesNotSkipTheMessage() {
        AtomicInteger handled = new AtomicInteger();
        var listener = alwaysFailing(handled);
        MessageExt message = payment();
        MessageAccessor.putProperty(message, "IDEM_DEAD_LETTERED", "true");

        ConsumeOrderlyStatus status = listener.consumeMessage(
                List.of(message), new ConsumeOrderlyContext(new MessageQueue("payments", "broker-a", 0)));

        assertThat(status)
                .as("a failing message is never acknowledged unhandled")
                .isEqualTo(ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT);
        assertThat(handled).hasValue(1);
    }

    /** An orderly listener whose handler counts its calls in {@code handled} and always fails. */
    private static MessageListenerOrderly alwaysFailing(AtomicInteger handled) {
        return IdempotentRocketMQ.builder(new DefaultMQPushConsumer("hostile-group"))
                .keyFrom(KeyExtractor.keys())
                .handler((key, message) -> {
                    handled.incrementAndGet();
                    return Outcome.failed("payment service down", null);
                })
                .build()
                .orderly();
    }

    private static MessageExt payment() {
        MessageExt message = new MessageExt();
        message.setTopic("payments");
        message.setKeys("10086:PAY");
        message.setBody("x".getBytes(StandardCharsets.UTF_8));
        return message;
    }
}
