package dev.idem.rocketmq;

import static dev.idem.rocketmq.RocketMQFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.DeadLetterException;
import dev.idem.Guard;
import dev.idem.IdempotencyKey;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import dev.idem.spi.ClaimRequest;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/**
 * The orderly listener keeps queue order: a message to retry suspends its queue ({@code
 * SUSPEND_CURRENT_QUEUE_A_MOMENT}) and the messages behind it wait; a key in progress elsewhere is waited for past the
 * attempt bound; a rejected message goes to {@code %DLQ%} with its reason and the queue moves on.
 */
class OrderlyTest {

    @Test
    void orderlyQueue_retriesAndWaitsInPlace_keepsOrder_deadLettersTheRejected() {
        String topic = RocketMQFixture.topic("orderly", 1);
        String group = topic + "-g";
        InMemoryStore store = InMemoryStore.create();
        IdempotencyKey held = IdempotencyKey.of("orderly", "held");
        store.claim(ClaimRequest.of(held, "another-consumer", Duration.ofMinutes(5)));
        AtomicBoolean failedOnce = new AtomicBoolean();
        List<String> seen = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer consumer = RocketMQFixture.consumer(group, topic, group);
        DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
        try (Guard guard = Guard.of(store, "orderly")) {
            consumer.registerMessageListener(RocketMQFixture.idem(consumer)
                    .retryPolicy(RocketMQFixture.FAST_RETRY.toBuilder()
                            .maxAttempts(2)
                            .build())
                    .keyFrom(KeyExtractor.keys())
                    .handler((key, message) -> {
                        Outcome outcome = guard.run(key, () -> {
                            if (key.equals("reject")) {
                                throw new DeadLetterException("not a valid order", null);
                            }
                            if (key.equals("a-2") && !failedOnce.getAndSet(true)) {
                                throw new IllegalStateException("transient");
                            }
                        });
                        seen.add(key + ":" + outcome.type());
                        return outcome;
                    })
                    .build()
                    .orderly());
            for (String key : List.of("a-1", "a-2", "a-3", "held", "reject", "a-4")) {
                RocketMQFixture.send(producer, topic, key, key);
            }
            RocketMQFixture.start(consumer);
            await().atMost(WAIT)
                    .until(() -> seen.stream()
                                    .filter(s -> s.equals("held:IN_PROGRESS"))
                                    .count()
                            >= 3);
            assertThat(seen).as("a-4 waits behind the held key").noneMatch(s -> s.startsWith("a-4"));
            store.release(held, "another-consumer");
            await().atMost(WAIT).until(() -> seen.contains("a-4:PROCESSED"));
            RocketMQFixture.awaitAllConsumed(consumer, topic, 1);
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
        assertThat(seen.stream().filter(s -> s.endsWith(":PROCESSED")).toList())
                .containsExactly("a-1:PROCESSED", "a-2:PROCESSED", "a-3:PROCESSED", "held:PROCESSED", "a-4:PROCESSED");
        assertThat(seen).containsSubsequence("a-2:FAILED", "a-2:PROCESSED", "a-3:PROCESSED");
        List<MessageExt> dead = RocketMQFixture.deadLetters(group);
        assertThat(dead).extracting(RocketMQFixture::body).containsExactly("reject");
        assertThat(dead.get(0).getUserProperty(IdempotentRocketMQ.DLQ_REASON)).isEqualTo("not a valid order");
        assertThat(dead.get(0).getUserProperty(IdempotentRocketMQ.DLQ_ATTEMPTS)).isEqualTo("1");
    }

    @Test
    void deadLetteredMessage_inABatchRedeliveredAfterASuspension_isCopiedOnce() {
        String topic = RocketMQFixture.topic("orderly-dlq-once", 1);
        String group = topic + "-g";
        AtomicBoolean failedOnce = new AtomicBoolean();
        List<String> seen = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer consumer = RocketMQFixture.consumer(group, topic, group);
        consumer.setConsumeMessageBatchMaxSize(4);
        DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
        try {
            consumer.registerMessageListener(RocketMQFixture.idem(consumer)
                    .keyFrom(KeyExtractor.keys())
                    .handler((key, message) -> {
                        seen.add(key);
                        return key.equals("b-1") && !failedOnce.getAndSet(true)
                                ? Outcome.failed("transient", null)
                                : Outcome.processed();
                    })
                    .build()
                    .orderly());
            // One batch: a message without a key (dead-lettered before any handler), then one that fails once.
            RocketMQFixture.send(producer, topic, null, "no key");
            RocketMQFixture.send(producer, topic, "b-1", "b-1");
            RocketMQFixture.start(consumer);
            await().atMost(WAIT).until(() -> seen.size() >= 2);
            RocketMQFixture.awaitAllConsumed(consumer, topic, 1);
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
        assertThat(seen).as("the batch was redelivered whole").containsExactly("b-1", "b-1");
        assertThat(RocketMQFixture.deadLetters(group))
                .extracting(RocketMQFixture::body)
                .containsExactly("no key");
    }
}
