package dev.idem.rocketmq;

import static dev.idem.rocketmq.RocketMQFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Outcome;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.junit.jupiter.api.Test;

/**
 * {@code DefaultMQPushConsumer.shutdown()} interrupts its consume threads once {@code awaitTerminationMillisWhenShutdown}
 * has passed, 0 by default: every handler still running would be interrupted in the middle of its effect (an embedded
 * H2 closes its database, an HTTP call's outcome becomes unknown, the claim is released and the effect applied again
 * on the redelivery).
 */
class ShutdownTest {

    @Test
    void handlerRunningAtShutdown_endsUninterrupted_andItsOffsetIsPersisted() throws Exception {
        String topic = RocketMQFixture.topic("shutdown-running", 1);
        String group = topic + "-g";
        CountDownLatch running = new CountDownLatch(1);
        AtomicReference<Boolean> interrupted = new AtomicReference<>();
        DefaultMQPushConsumer consumer = RocketMQFixture.consumer(group, topic, group);
        DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
        try {
            consumer.registerMessageListener(RocketMQFixture.idem(consumer)
                    .keyFrom(KeyExtractor.keys())
                    .handler((key, message) -> {
                        running.countDown();
                        try {
                            Thread.sleep(500); // the effect, under way when the consumer is shut down
                            interrupted.set(false);
                        } catch (InterruptedException e) {
                            interrupted.set(true);
                            Thread.currentThread().interrupt();
                        }
                        return Outcome.processed();
                    })
                    .build()
                    .concurrently());
            RocketMQFixture.start(consumer);
            RocketMQFixture.send(producer, topic, "order-1:PAY", "pay");
            assertThat(running.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
        assertThat(interrupted.get()).as("the running handler was interrupted").isFalse();
        assertThat(RocketMQFixture.broker().committedOffset(group, topic, 0))
                .as("the offset persisted at shutdown is past the message the handler finished")
                .isEqualTo(1);
    }
}
