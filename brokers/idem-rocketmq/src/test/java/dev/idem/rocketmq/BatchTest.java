package dev.idem.rocketmq;

import static dev.idem.rocketmq.RocketMQFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.DeadLetterException;
import dev.idem.Guard;
import dev.idem.IdempotencyKey;
import dev.idem.InMemoryStore;
import dev.idem.spi.ClaimRequest;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/**
 * Batches ({@code consumeMessageBatchMaxSize}): what is final is acknowledged, only the rest is retried. RocketMQ's
 * own verb for a batch is all or a prefix ({@code ackIndex}); the guarded listener settles the messages in the
 * middle itself (dead-letter copy, uncounted retry copy, counted send-back) and leaves a trailing retry to RocketMQ.
 * Both tests mostly wait for redeliveries; each has its own topic, group and client instance, so they run at once.
 */
@Execution(ExecutionMode.CONCURRENT)
class BatchTest {
    private static final List<String> BODIES = List.of("ok-a", "retry-once", "held", "reject", "ok-b", "retry-tail");
    /**
     * The waits for the held message's redeliveries: each one goes through a retry copy, the broker's delay level, the
     * retry topic's index and a long poll: about a second alone, while one full local {@code .ci/run} at load 20 on two
     * cores saw fewer than three such trips in the 58 s {@link RocketMQFixture#WAIT} left after the first delivery.
     */
    private static final Duration REDELIVERIES_WAIT = Duration.ofMinutes(3);

    @Test
    void mixedBatch_finalMessagesHandledOnce_retriedOnesComeBack_rejectedOneDeadLettered() {
        String topic = RocketMQFixture.topic("batch", 1);
        String group = topic + "-g";
        InMemoryStore store = InMemoryStore.create();
        IdempotencyKey held = IdempotencyKey.of("batch", "held");
        store.claim(ClaimRequest.of(held, "another-consumer", Duration.ofMinutes(5)));
        Map<String, List<Integer>> deliveries = new ConcurrentHashMap<>();
        List<List<String>> batches = new CopyOnWriteArrayList<>();
        Map<String, AtomicBoolean> failedOnce =
                Map.of("retry-once", new AtomicBoolean(), "retry-tail", new AtomicBoolean());
        DefaultMQPushConsumer consumer = RocketMQFixture.consumer(group, topic, group);
        consumer.setConsumeMessageBatchMaxSize(4);
        try (Guard guard = Guard.of(store, "batch")) {
            MessageListenerConcurrently listener = RocketMQFixture.idem(consumer)
                    .retryPolicy(RocketMQFixture.FAST_RETRY.toBuilder()
                            .maxAttempts(3)
                            .build())
                    .keyFrom(KeyExtractor.keys())
                    .handler((key, message) -> {
                        deliveries
                                .computeIfAbsent(key, k -> new CopyOnWriteArrayList<>())
                                .add(message.getReconsumeTimes());
                        return guard.run(key, () -> {
                            if (key.equals("reject")) {
                                throw new DeadLetterException("cannot be handled", null);
                            }
                            AtomicBoolean failed = failedOnce.get(key);
                            if (failed != null && !failed.getAndSet(true)) {
                                throw new IllegalStateException("transient");
                            }
                        });
                    })
                    .build()
                    .concurrently();
            consumer.registerMessageListener(recordingBatches(listener, batches));
            DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
            try {
                BODIES.forEach(body -> RocketMQFixture.send(producer, topic, body, body));
                await().atMost(WAIT).until(() -> RocketMQFixture.broker().endOffset(topic, 0) == BODIES.size());
                RocketMQFixture.start(consumer);
                await().atMost(REDELIVERIES_WAIT)
                        .untilAsserted(() -> assertThat(deliveries.getOrDefault("held", List.of()))
                                .as(() -> whereTheyAre(deliveries, batches, group))
                                .hasSizeGreaterThanOrEqualTo(4));
                store.release(held, "another-consumer");
                await().atMost(REDELIVERIES_WAIT).untilAsserted(() -> {
                    assertThat(deliveries.getOrDefault("held", List.of()))
                            .as(() -> whereTheyAre(deliveries, batches, group))
                            .hasSizeGreaterThanOrEqualTo(5);
                    assertThat(deliveries.getOrDefault("retry-once", List.of()))
                            .as(() -> whereTheyAre(deliveries, batches, group))
                            .hasSize(2);
                    assertThat(deliveries.getOrDefault("retry-tail", List.of()))
                            .as(() -> whereTheyAre(deliveries, batches, group))
                            .hasSize(2);
                });
                RocketMQFixture.awaitAllConsumed(consumer, topic, 1);
                await().atMost(WAIT)
                        .until(() -> guard.store()
                                .lookup(IdempotencyKey.of("batch", "held"))
                                .isPresent());
            } finally {
                consumer.shutdown();
                producer.shutdown();
            }
        }
        assertThat(batches)
                .as("the first four messages came in one call (the two batches of a pull run concurrently)")
                .contains(BODIES.subList(0, 4));
        assertThat(deliveries.get("ok-a")).as("final: never redelivered").containsExactly(0);
        assertThat(deliveries.get("ok-b")).containsExactly(0);
        assertThat(deliveries.get("reject")).containsExactly(0);
        assertThat(deliveries.get("retry-once"))
                .as("sent back by the listener, counted")
                .containsExactly(0, 1);
        assertThat(deliveries.get("retry-tail"))
                .as("sent back by RocketMQ (ackIndex), counted")
                .containsExactly(0, 1);
        assertThat(deliveries.get("held"))
                .as("in progress elsewhere more often than maxAttempts: retried uncounted, never dead-lettered")
                .hasSizeGreaterThanOrEqualTo(5)
                .containsOnly(0);
        List<MessageExt> dead = RocketMQFixture.deadLetters(group);
        assertThat(dead).extracting(RocketMQFixture::body).containsExactly("reject");
        assertThat(dead.get(0).getUserProperty(IdempotentRocketMQ.DLQ_REASON)).isEqualTo("cannot be handled");
    }

    /**
     * For a wait that timed out: the deliveries and batches seen, the messages the broker still holds back on a delay
     * level, and how far the group read its retry topic.
     */
    private static String whereTheyAre(
            Map<String, List<Integer>> deliveries, List<List<String>> batches, String group) {
        String retryTopic = "%RETRY%" + group;
        String broker;
        try {
            broker = "held back on a delay level in the broker: "
                    + RocketMQFixture.broker().scheduledPending() + ", "
                    + retryTopic + " end offset " + RocketMQFixture.broker().endOffset(retryTopic, 0) + ", read to "
                    + RocketMQFixture.broker().committedOffset(group, retryTopic, 0);
        } catch (Exception e) {
            broker = "the broker did not answer: " + e;
        }
        return broker + "; deliveries (reconsume times per key) " + deliveries + "; batches " + batches;
    }

    @Test
    void plainListener_oneFailureInABatch_redeliversTheWholeBatch() {
        String topic = RocketMQFixture.topic("batchplain", 1);
        String group = topic + "-g";
        Map<String, List<Integer>> deliveries = new ConcurrentHashMap<>();
        AtomicBoolean failed = new AtomicBoolean();
        DefaultMQPushConsumer consumer = RocketMQFixture.consumer(group, topic, group);
        consumer.setConsumeMessageBatchMaxSize(4);
        consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            boolean retry = false;
            for (MessageExt message : messages) {
                String body = RocketMQFixture.body(message);
                deliveries
                        .computeIfAbsent(body, k -> new CopyOnWriteArrayList<>())
                        .add(message.getReconsumeTimes());
                retry |= body.equals("retry-once") && !failed.getAndSet(true);
            }
            return retry ? ConsumeConcurrentlyStatus.RECONSUME_LATER : ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
        try {
            List.of("ok-a", "retry-once", "ok-b", "ok-c").forEach(b -> RocketMQFixture.send(producer, topic, b, b));
            RocketMQFixture.start(consumer);
            await().atMost(WAIT)
                    .until(() -> deliveries
                                            .getOrDefault("retry-once", List.of())
                                            .size()
                                    == 2
                            && deliveries.getOrDefault("ok-a", List.of()).size() == 2);
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
        assertThat(deliveries.get("ok-a"))
                .as("handled again with the failed one")
                .containsExactly(0, 1);
    }

    private static MessageListenerConcurrently recordingBatches(
            MessageListenerConcurrently listener, List<List<String>> batches) {
        return (messages, context) -> {
            batches.add(messages.stream().map(RocketMQFixture::body).toList());
            return listener.consumeMessage(messages, context);
        };
    }
}
