package dev.idem.rocketmq;

import static dev.idem.rocketmq.RocketMQFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.DeadLetterException;
import dev.idem.Guard;
import dev.idem.InMemoryStore;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/**
 * Poison messages: one without a key, one with several keys in {@code KEYS}, one the handler rejects, one that fails
 * on every attempt. Each ends in {@code
 * %DLQ%<group>} with its reason, and the good messages around them are all handled: nothing is stuck.
 */
class PoisonMessageTest {

    @Test
    void poisonMessages_goToTheDeadLetterQueueWithTheirReason_andTheRestIsHandled() {
        String topic = RocketMQFixture.topic("poison", 2);
        String group = topic + "-g";
        Set<String> applied = ConcurrentHashMap.newKeySet();
        Guard guard = Guard.of(InMemoryStore.create(), "poison");
        DefaultMQPushConsumer consumer = RocketMQFixture.consumer(group, topic, group + "-a");
        IdempotentRocketMQ idem = RocketMQFixture.idem(consumer)
                .retryPolicy(
                        RocketMQFixture.FAST_RETRY.toBuilder().maxAttempts(3).build())
                .keyFrom(KeyExtractor.keys())
                .handler((key, message) -> switch (RocketMQFixture.body(message)) {
                    case "invalid" -> throw new DeadLetterException("amount is not a number", null);
                    case "broken" -> throw new IllegalStateException("downstream keeps failing");
                    default -> guard.run(key, () -> applied.add(key));
                })
                .build();
        consumer.registerMessageListener(idem.concurrently());
        DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
        try {
            RocketMQFixture.start(consumer);
            RocketMQFixture.send(producer, topic, "ok-1", "good");
            RocketMQFixture.send(producer, topic, null, "no key");
            RocketMQFixture.send(producer, topic, "order-7 PAY", "several keys");
            RocketMQFixture.send(producer, topic, "bad-1", "invalid");
            RocketMQFixture.send(producer, topic, "broken-1", "broken");
            RocketMQFixture.send(producer, topic, "ok-2", "good");

            await().atMost(WAIT).until(() -> RocketMQFixture.deadLetters(group).size() == 4);
            await().atMost(WAIT).until(() -> applied.size() == 2);
            Map<String, MessageExt> dead = RocketMQFixture.deadLetters(group).stream()
                    .collect(Collectors.toMap(RocketMQFixture::body, m -> m));
            assertThat(dead.keySet()).containsExactlyInAnyOrder("no key", "several keys", "invalid", "broken");
            assertThat(dead.get("several keys").getUserProperty(IdempotentRocketMQ.DLQ_REASON))
                    .contains("2 keys")
                    .contains("one business key")
                    .contains("KeyExtractor.property");
            assertThat(dead.get("no key").getUserProperty(IdempotentRocketMQ.DLQ_REASON))
                    .contains("no idempotency key")
                    .contains("KEYS");
            assertThat(dead.get("no key").getUserProperty(IdempotentRocketMQ.DLQ_OUTCOME))
                    .isEqualTo("REJECTED");
            assertThat(dead.get("invalid").getUserProperty(IdempotentRocketMQ.DLQ_REASON))
                    .isEqualTo("amount is not a number");
            assertThat(dead.get("invalid").getUserProperty(IdempotentRocketMQ.DLQ_ATTEMPTS))
                    .isEqualTo("1");
            assertThat(dead.get("broken").getUserProperty(IdempotentRocketMQ.DLQ_REASON))
                    .startsWith("gave up after 3 attempts; last: handler threw java.lang.IllegalStateException");
            assertThat(dead.get("broken").getUserProperty(IdempotentRocketMQ.DLQ_OUTCOME))
                    .isEqualTo("FAILED");
            assertThat(dead.get("broken").getProperty(MessageConst.PROPERTY_RETRY_TOPIC))
                    .as("the original topic, as RocketMQ's own dead letters carry it")
                    .isEqualTo(topic);
            assertThat(applied).containsExactlyInAnyOrder("ok-1", "ok-2");
            RocketMQFixture.awaitAllConsumed(consumer, topic, 2);
        } finally {
            consumer.shutdown();
            producer.shutdown();
            guard.close();
        }
    }

    @Test
    void unguarded_appliesTheKeylessMessage_andRetriesTheInvalidOneInsteadOfDeadLetteringIt() {
        String topic = RocketMQFixture.topic("poisonplain", 1);
        String group = topic + "-g";
        List<String> applied = new CopyOnWriteArrayList<>();
        List<Integer> invalidDeliveries = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer consumer = RocketMQFixture.consumer(group, topic, group + "-a");
        consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            for (MessageExt message : messages) {
                String body = RocketMQFixture.body(message);
                if (body.equals("invalid")) {
                    invalidDeliveries.add(message.getReconsumeTimes());
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
                applied.add(body);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
        try {
            RocketMQFixture.start(consumer);
            RocketMQFixture.send(producer, new Message(topic, "no key".getBytes(StandardCharsets.UTF_8)));
            RocketMQFixture.send(producer, topic, "bad-1", "invalid");
            await().atMost(WAIT).until(() -> invalidDeliveries.size() >= 2);
            assertThat(applied).as("applied with no key to recognise a copy by").containsExactly("no key");
            assertThat(RocketMQFixture.deadLetters(group))
                    .as("the invalid message is retried, not parked")
                    .isEmpty();
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
    }
}
