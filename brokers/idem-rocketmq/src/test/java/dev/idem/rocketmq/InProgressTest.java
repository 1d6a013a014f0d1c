package dev.idem.rocketmq;

import static dev.idem.rocketmq.RocketMQFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Guard;
import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import dev.idem.spi.ClaimRequest;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.junit.jupiter.api.Test;

/**
 * A key held by another consumer for longer than the attempt bound allows retries. RocketMQ counts every {@code
 * RECONSUME_LATER} and dead-letters at {@code maxReconsumeTimes}, which would lose a message that only had to wait;
 * the guarded listener retries it without counting, and reports each step.
 */
class InProgressTest {

    @Test
    void plainRocketMQ_deadLettersAMessageThatOnlyWaitedForAHeldKey() {
        String topic = RocketMQFixture.topic("heldplain", 1);
        String group = topic + "-g";
        List<Integer> deliveries = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer consumer = RocketMQFixture.consumer(group, topic, group);
        consumer.setMaxReconsumeTimes(2);
        consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            messages.forEach(m -> deliveries.add(m.getReconsumeTimes()));
            return ConsumeConcurrentlyStatus.RECONSUME_LATER; // "in progress elsewhere, try later"
        });
        DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
        try {
            RocketMQFixture.start(consumer);
            RocketMQFixture.send(producer, topic, "order-5:PAY", "held");
            await().atMost(WAIT).until(() -> RocketMQFixture.deadLetters(group).size() == 1);
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
        assertThat(deliveries).containsExactly(0, 1, 2);
    }

    @Test
    void keyHeldElsewhere_retriedUncountedPastTheBound_thenHandled_eventsReportEachStep() {
        String topic = RocketMQFixture.topic("held", 1);
        String group = topic + "-g";
        InMemoryStore store = InMemoryStore.create();
        IdempotencyKey key = IdempotencyKey.of("held", "order-5:PAY");
        store.claim(ClaimRequest.of(key, "another-consumer", Duration.ofMinutes(5)));
        List<String> outcomes = new CopyOnWriteArrayList<>();
        List<IdempotencyEvent> events = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer consumer = RocketMQFixture.consumer(group, topic, group);
        DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
        try (Guard guard = Guard.of(store, "held")) {
            consumer.registerMessageListener(RocketMQFixture.idem(consumer)
                    .retryPolicy(RocketMQFixture.FAST_RETRY.toBuilder()
                            .maxAttempts(2)
                            .build())
                    .namespace("held")
                    .listener(events::add)
                    .keyFrom(KeyExtractor.keys())
                    .handler((k, message) -> {
                        Outcome outcome = guard.run(k, () -> {});
                        outcomes.add(outcome.type() + "@" + message.getReconsumeTimes());
                        return outcome;
                    })
                    .build()
                    .concurrently());
            RocketMQFixture.start(consumer);
            RocketMQFixture.send(producer, topic, "order-5:PAY", "held");
            await().atMost(WAIT).until(() -> outcomes.size() >= 3);
            store.release(key, "another-consumer");
            await().atMost(WAIT).until(() -> outcomes.contains("PROCESSED@0"));
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
        assertThat(outcomes).startsWith("IN_PROGRESS@0", "IN_PROGRESS@0", "IN_PROGRESS@0");
        assertThat(RocketMQFixture.deadLetters(group)).isEmpty();
        assertThat(events).allSatisfy(e -> {
            assertThat(e.source()).isEqualTo("rocketmq");
            assertThat(e.namespace()).isEqualTo("held");
            assertThat(e.attempt()).isEqualTo(1);
            assertThat(e.keyLogId()).isEqualTo(key.logId());
        });
        assertThat(events)
                .extracting(IdempotencyEvent::type)
                .startsWith(
                        IdempotencyEvent.Type.RETRY_SCHEDULED,
                        IdempotencyEvent.Type.RETRY_SCHEDULED,
                        IdempotencyEvent.Type.RETRY_SCHEDULED)
                .endsWith(IdempotencyEvent.Type.COMMITTED);
        assertThat(events.get(0).outcome().type()).isEqualTo(Outcome.Type.IN_PROGRESS);
    }
}
