package dev.idem.rocketmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.Test;

/**
 * Properties a producer can set on its messages: the names the listeners or RocketMQ use for their own bookkeeping
 * (attempt counts, reconsume counts, bounds) never change how often a message is tried, and never make a listener
 * throw or skip a message.
 */
class HostileMessageTest {

    @Test
    void concurrent_countsSetByTheProducer_doNotDeadLetterAMessageThatFailsTwice() {
        String topic = RocketMQFixture.topic("hostile-concurrent", 1);
        String group = topic + "-g";
        List<Integer> reconsumeTimes = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer consumer = RocketMQFixture.consumer(group, topic, group);
        DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
        try {
            consumer.registerMessageListener(RocketMQFixture.idem(consumer)
                    .retryPolicy(RocketMQFixture.FAST_RETRY.toBuilder()
                            .maxAttempts(3)
                            .build())
                    .keyFrom(KeyExtractor.keys())
                    .handler((key, message) -> {
                        reconsumeTimes.add(message.getReconsumeTimes());
                        return reconsumeTimes.size() <= 2 ? Outcome.failed("transient", null) : Outcome.processed();
                    })
                    .build()
                    .concurrently());
            Message message = new Message(topic, "pay".getBytes(StandardCharsets.UTF_8));
            message.setKeys("10086:PAY");
            message.putUserProperty(RedeliveryAttempts.WAITS, "0:2147483647");
            message.putUserProperty("IDEM_HANDLER_ATTEMPTS", "1000");
            MessageAccessor.putProperty(message, MessageConst.PROPERTY_RECONSUME_TIME, "1000");
            MessageAccessor.putProperty(message, MessageConst.PROPERTY_MAX_RECONSUME_TIMES, "1");
            RocketMQFixture.send(producer, message);
            RocketMQFixture.start(consumer);
            await().atMost(RocketMQFixture.WAIT).until(() -> reconsumeTimes.size() >= 3);
            RocketMQFixture.awaitAllConsumed(consumer, topic, 1);
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
        assertThat(reconsumeTimes).containsExactly(0, 1, 2);
        assertThat(RocketMQFixture.deadLetters(group)).isEmpty();
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

    @Test
    void orderly_attemptCountSetByTheProducer_doesNotDeadLetterAMessageThatFailsOnce() {
        String topic = RocketMQFixture.topic("hostile-count", 1);
        String group = topic + "-g";
        List<String> seen = new CopyOnWriteArrayList<>();
        DefaultMQPushConsumer consumer = RocketMQFixture.consumer(group, topic, group);
        DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
        try {
            consumer.registerMessageListener(RocketMQFixture.idem(consumer)
                    .keyFrom(KeyExtractor.keys())
                    .handler((key, message) -> {
                        seen.add(key);
                        return seen.size() == 1 ? Outcome.failed("transient", null) : Outcome.processed();
                    })
                    .build()
                    .orderly());
            Message message = new Message(topic, "pay".getBytes(StandardCharsets.UTF_8));
            message.setKeys("10086:PAY");
            message.putUserProperty("IDEM_HANDLER_ATTEMPTS", "1000");
            RocketMQFixture.send(producer, message);
            RocketMQFixture.start(consumer);
            await().atMost(RocketMQFixture.WAIT).until(() -> seen.size() >= 2);
            RocketMQFixture.awaitAllConsumed(consumer, topic, 1);
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
        assertThat(RocketMQFixture.deadLetters(group))
                .as("one failure of a policy allowing 30 attempts")
                .isEmpty();
        assertThat(seen).containsExactly("10086:PAY", "10086:PAY");
    }

    @Test
    void orderly_failingHandler_isDeadLetteredAfterExactlyTheBound() {
        String topic = RocketMQFixture.topic("orderly-bound", 1);
        String group = topic + "-g";
        AtomicInteger handled = new AtomicInteger();
        DefaultMQPushConsumer consumer = RocketMQFixture.consumer(group, topic, group);
        DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
        try {
            consumer.registerMessageListener(RocketMQFixture.idem(consumer)
                    .retryPolicy(RocketMQFixture.FAST_RETRY.toBuilder()
                            .maxAttempts(3)
                            .build())
                    .keyFrom(KeyExtractor.keys())
                    .handler((key, message) -> {
                        handled.incrementAndGet();
                        return Outcome.failed("payment service down", null);
                    })
                    .build()
                    .orderly());
            RocketMQFixture.send(producer, topic, "10086:PAY", "pay");
            RocketMQFixture.start(consumer);
            await().atMost(RocketMQFixture.WAIT)
                    .until(() -> RocketMQFixture.deadLetters(group).size() == 1);
            RocketMQFixture.awaitAllConsumed(consumer, topic, 1);
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
        assertThat(handled).hasValue(3);
        MessageExt dead = RocketMQFixture.deadLetters(group).get(0);
        assertThat(dead.getUserProperty(IdempotentRocketMQ.DLQ_REASON))
                .isEqualTo("gave up after 3 attempts; last: payment service down");
        assertThat(dead.getUserProperty(IdempotentRocketMQ.DLQ_ATTEMPTS)).isEqualTo("3");
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
