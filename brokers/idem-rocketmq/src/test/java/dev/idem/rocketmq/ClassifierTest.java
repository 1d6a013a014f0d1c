package dev.idem.rocketmq;

import static dev.idem.rocketmq.RocketMQFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import dev.idem.spi.FailureClassifier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.junit.jupiter.api.Test;

/**
 * {@link IdempotentRocketMQ.Builder#classifier}: a framework's exception that the classifier names as an unreachable
 * store is a wait, never counted: tried far beyond the bound, it is not dead-lettered, and applied once it passes.
 */
class ClassifierTest {
    private static final int MAX_ATTEMPTS = 2;

    /** A framework's own exception for a database it cannot reach, unknown to the standard classifier. */
    static final class FrameworkOutage extends RuntimeException {
        FrameworkOutage() {
            super("no connection to the database");
        }
    }

    @Test
    void anExceptionTheClassifierNamesUnreachable_isAnUncountedWait_neverDeadLettered() {
        String topic = RocketMQFixture.topic("classifier", 1);
        String group = topic + "-g";
        AtomicInteger tries = new AtomicInteger();
        AtomicInteger applied = new AtomicInteger();
        AtomicBoolean down = new AtomicBoolean(true);
        DefaultMQPushConsumer consumer = RocketMQFixture.consumer(group, topic, group);
        DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
        try {
            consumer.registerMessageListener(RocketMQFixture.idem(consumer)
                    .retryPolicy(RocketMQFixture.FAST_RETRY.toBuilder()
                            .maxAttempts(MAX_ATTEMPTS)
                            .build())
                    .classifier(FailureClassifier.builder()
                            .unreachable(FrameworkOutage.class)
                            .build())
                    .keyFrom(KeyExtractor.keys())
                    .handler((key, message) -> {
                        tries.incrementAndGet();
                        if (down.get()) {
                            throw new FrameworkOutage();
                        }
                        applied.incrementAndGet();
                        return Outcome.processed();
                    })
                    .build()
                    .concurrently());
            RocketMQFixture.start(consumer);
            RocketMQFixture.send(producer, topic, "pay-1", "p");

            await().atMost(WAIT).until(() -> {
                assertThat(RocketMQFixture.deadLetters(group)).isEmpty();
                return tries.get() > MAX_ATTEMPTS + 1;
            });
            down.set(false);

            await().atMost(WAIT).until(() -> applied.get() == 1);
            assertThat(RocketMQFixture.deadLetters(group)).isEmpty();
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
    }
}
