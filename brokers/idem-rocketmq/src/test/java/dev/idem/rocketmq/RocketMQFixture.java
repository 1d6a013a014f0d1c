package dev.idem.rocketmq;

import static org.awaitility.Awaitility.await;

import dev.idem.RetryPolicy;
import dev.idem.testsupport.EmbeddedRocketMQ;
import dev.idem.testsupport.TestServers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.store.OffsetStore;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.store.exception.ConsumeQueueException;

/**
 * What the RocketMQ proof tests share: the JVM's {@link EmbeddedRocketMQ}, unique topics and groups, consumers and
 * producers set for quick tests. The business effect is idem-test-support's {@link dev.idem.testsupport.PaymentBank}.
 */
final class RocketMQFixture {
    static final Duration WAIT = Duration.ofSeconds(60);
    /** Retry every 200 ms (the broker's shortest delay level, 1 s, in practice), up to 30 attempts. */
    static final RetryPolicy FAST_RETRY = RetryPolicy.builder()
            .initialDelay(Duration.ofMillis(200))
            .multiplier(1.0)
            .maxDelay(Duration.ofMillis(200))
            .maxAttempts(30)
            .jitter(0.0)
            .build();

    private RocketMQFixture() {}

    static EmbeddedRocketMQ broker() {
        return EmbeddedRocketMQ.shared();
    }

    /** A fresh topic with {@code queues} queues. */
    static String topic(String name, int queues) {
        String topic = TestServers.uniquePrefix(name);
        broker().createTopic(topic, queues);
        return topic;
    }

    /**
     * A push consumer of {@code group} on {@code topic}, not started: first offset, offsets persisted every 200 ms,
     * its own client instance (own connections) named {@code instance}. The group's retry and dead-letter topics are
     * created first.
     */
    static DefaultMQPushConsumer consumer(String group, String topic, String instance) {
        broker().createGroupTopics(group);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(broker().nameServer());
        consumer.setInstanceName(instance);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPersistConsumerOffsetInterval(200);
        consumer.setHeartbeatBrokerInterval(1000);
        consumer.setPollNameServerInterval(1000);
        try {
            consumer.subscribe(topic, "*");
        } catch (MQClientException e) {
            throw new IllegalStateException(e);
        }
        return consumer;
    }

    /** A guarded-listener builder on {@code consumer} with the broker's delay levels and {@link #FAST_RETRY}. */
    static IdempotentRocketMQ.Builder idem(DefaultMQPushConsumer consumer) {
        return IdempotentRocketMQ.builder(consumer)
                .delayLevels(DelayLevels.parse(EmbeddedRocketMQ.DELAY_LEVELS))
                .retryPolicy(FAST_RETRY);
    }

    /** A started producer with the recommended settings and its own client instance. */
    static DefaultMQProducer producer(String instance) {
        DefaultMQProducer producer = new DefaultMQProducer(instance + "-producer");
        producer.setNamesrvAddr(broker().nameServer());
        producer.setInstanceName(instance);
        RocketMQProducers.applyRecommendedSettings(producer);
        try {
            producer.start();
        } catch (MQClientException e) {
            throw new IllegalStateException(e);
        }
        return producer;
    }

    /** Sends {@code body} to {@code topic} with business key {@code key} in KEYS and waits for SEND_OK. */
    static SendResult send(DefaultMQProducer producer, String topic, String key, String body) {
        Message message = new Message(topic, body.getBytes(StandardCharsets.UTF_8));
        if (key != null) {
            message.setKeys(key);
        }
        return send(producer, message);
    }

    static SendResult send(DefaultMQProducer producer, Message message) {
        try {
            SendResult result = producer.send(message);
            if (result.getSendStatus() != SendStatus.SEND_OK) {
                throw new IllegalStateException("send to " + message.getTopic() + ": " + result);
            }
            return result;
        } catch (Exception e) {
            throw new IllegalStateException("send to " + message.getTopic() + " failed", e);
        }
    }

    static void start(DefaultMQPushConsumer consumer) {
        try {
            consumer.start();
        } catch (MQClientException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The copies in {@code %DLQ%<group>}. */
    static List<MessageExt> deadLetters(String group) {
        try {
            return broker().messages(MixAll.getDLQTopic(group));
        } catch (ConsumeQueueException e) {
            throw new IllegalStateException(e);
        }
    }

    static String body(MessageExt message) {
        return new String(message.getBody(), StandardCharsets.UTF_8);
    }

    /** Waits until {@code consumer} has consumed (in its offset store) every queue of {@code topic} to its end. */
    static void awaitAllConsumed(DefaultMQPushConsumer consumer, String topic, int queues) {
        await().atMost(WAIT).until(() -> consumedAll(consumer, topic, queues));
    }

    static boolean consumedAll(DefaultMQPushConsumer consumer, String topic, int queues) throws Exception {
        OffsetStore offsets = consumer.getDefaultMQPushConsumerImpl().getOffsetStore();
        for (int q = 0; q < queues; q++) {
            MessageQueue queue = new MessageQueue(topic, EmbeddedRocketMQ.BROKER_NAME, q);
            if (offsets.readOffset(queue, ReadOffsetType.READ_FROM_MEMORY) < broker().endOffset(topic, q)) {
                return false;
            }
        }
        return true;
    }
}
