package dev.idem.rocketmq;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Outcome;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A handler that throws {@link InterruptedException} leaves the interrupt set on RocketMQ's consume thread ({@code
 * Outcome.ofException} restores it): it must not hit the next message that thread handles. No broker: the listener is
 * called directly, twice on one thread.
 */
class InterruptTest {

    @AfterEach
    void clearInterrupt() {
        Thread.interrupted();
    }

    @Test
    void interruptKeptByOneHandler_doesNotReachTheNextMessage() {
        List<Boolean> interruptedAtStart = new ArrayList<>();
        var listener = IdempotentRocketMQ.builder(new DefaultMQPushConsumer("interrupt-group"))
                .keyFrom(KeyExtractor.keys())
                .handler((key, message) -> {
                    interruptedAtStart.add(Thread.currentThread().isInterrupted());
                    if (key.equals("order-1:PAY")) {
                        throw new InterruptedException("its own call was interrupted");
                    }
                    return Outcome.processed();
                })
                .build()
                .concurrently();
        var context = new ConsumeConcurrentlyContext(new MessageQueue("payments", "broker-a", 0));

        listener.consumeMessage(List.of(message("order-1:PAY")), context);
        listener.consumeMessage(List.of(message("order-2:PAY")), context);

        assertThat(interruptedAtStart).containsExactly(false, false);
    }

    private static MessageExt message(String key) {
        MessageExt message = new MessageExt();
        message.setTopic("payments");
        message.setKeys(key);
        return message;
    }
}
