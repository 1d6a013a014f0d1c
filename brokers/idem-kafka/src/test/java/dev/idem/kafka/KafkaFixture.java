package dev.idem.kafka;

import static org.awaitility.Awaitility.await;

import dev.idem.RetryPolicy;
import dev.idem.testsupport.EmbeddedKafka;
import dev.idem.testsupport.TestServers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * What the Kafka proof tests share: the JVM's embedded broker, unique topics and groups, fast-rebalancing consumer
 * settings. The business effect is idem-test-support's {@link dev.idem.testsupport.PaymentBank}.
 */
final class KafkaFixture {
    static final Duration WAIT = Duration.ofSeconds(60);
    /** Retry a record every 100 ms, for up to 30 s. */
    static final RetryPolicy FAST_RETRY = RetryPolicy.builder()
            .initialDelay(Duration.ofMillis(100))
            .multiplier(1.0)
            .maxDelay(Duration.ofMillis(100))
            .maxAttempts(300)
            .jitter(0.0)
            .build();

    private KafkaFixture() {}

    static EmbeddedKafka kafka() {
        return EmbeddedKafka.shared();
    }

    /** A fresh topic and its dead-letter topic {@code <topic>-dlt}. */
    static String topic(String name, int partitions) {
        String topic = TestServers.uniquePrefix(name);
        kafka().createTopic(topic, partitions);
        kafka().createTopic(topic + "-dlt", 1);
        return topic;
    }

    /** Consumer settings for a group that rebalances within a few seconds (classic protocol, short session). */
    static Map<String, Object> consumerProps(String group) {
        return consumerProps(group, "classic");
    }

    /**
     * Consumer settings for {@code protocol} ({@code classic}: short session, range assignor; {@code consumer}: KIP-848,
     * whose session and heartbeat the embedded broker shortens).
     */
    static Map<String, Object> consumerProps(String group, String protocol) {
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrapServers());
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        if (protocol.equals("classic")) {
            props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 3000);
            props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 300);
            props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RangeAssignor.class.getName());
        }
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, group + "-" + Long.toString(System.nanoTime(), 36));
        return props;
    }

    /** Sends {@code count} records keyed {@code prefix + i} to partition 0 without waiting for each ack. */
    static void sendMany(String topic, String prefix, int count) {
        sendMany(topic, 0, prefix, count);
    }

    /**
     * Sends {@code count} records keyed {@code prefix + i} to {@code partition}, then waits for every ack: a send the
     * broker refused fails here, naming it, not later as a record the test's consumer never saw.
     */
    static void sendMany(String topic, int partition, String prefix, int count) {
        try (KafkaProducer<String, String> producer = producer()) {
            List<Future<RecordMetadata>> acks = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                acks.add(producer.send(
                        KafkaProducers.withKey(new ProducerRecord<>(topic, partition, null, "v" + i), prefix + i)));
            }
            producer.flush();
            for (int i = 0; i < count; i++) {
                acks.get(i).get(30, TimeUnit.SECONDS);
            }
        } catch (Exception e) {
            throw new IllegalStateException("send to " + topic + " failed", e);
        }
    }

    /** A runner for {@code group} on {@code topic}: the key from the {@code idem-key} header, {@link #FAST_RETRY}. */
    static IdempotentKafkaConsumer.Builder<String, String> consumer(String group, String topic) {
        return IdempotentKafkaConsumer.builder(consumerProps(group))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .retryPolicy(FAST_RETRY);
    }

    static KafkaProducer<String, String> producer() {
        return producer(kafka().bootstrapServers(), Map.of());
    }

    static KafkaProducer<String, String> producer(String bootstrap, Map<String, Object> overrides) {
        Map<String, Object> props = new HashMap<>(KafkaProducers.recommendedSettings());
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        props.putAll(overrides);
        return new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
    }

    /** Sends {@code account:amount} with idempotency key {@code key} to {@code partition} and waits for the ack. */
    static void send(
            KafkaProducer<String, String> producer, String topic, Integer partition, String key, String value) {
        try {
            producer.send(KafkaProducers.withKey(new ProducerRecord<>(topic, partition, null, value), key))
                    .get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("send to " + topic + " failed", e);
        }
    }

    /** Every record of {@code topic} from the beginning, read with a throw-away consumer. */
    static List<ConsumerRecord<byte[], byte[]>> readAll(String topic) {
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrapServers());
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
                    .map(p -> new TopicPartition(topic, p.partition()))
                    .toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            List<ConsumerRecord<byte[], byte[]>> all = new ArrayList<>();
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (partitions.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("could not read " + topic + " to its end " + end);
                }
                consumer.poll(Duration.ofMillis(200)).forEach(all::add);
            }
            return all;
        }
    }

    static String header(ConsumerRecord<?, ?> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    /** Waits until {@code group} has committed every partition of {@code topic} up to its end. */
    static void awaitAllCommitted(String group, String topic) {
        await().atMost(WAIT).until(() -> {
            Map<TopicPartition, Long> end = endOffsets(topic);
            Map<TopicPartition, OffsetAndMetadata> committed = committed(group);
            return end.entrySet().stream().allMatch(e -> {
                OffsetAndMetadata c = committed.get(e.getKey());
                return e.getValue() == 0 || (c != null && c.offset() == e.getValue());
            });
        });
    }

    static Map<TopicPartition, OffsetAndMetadata> committed(String group) throws Exception {
        return kafka().admin()
                .listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata()
                .get(30, TimeUnit.SECONDS);
    }

    static Map<TopicPartition, Long> endOffsets(String topic) throws Exception {
        int partitions = kafka().admin()
                .describeTopics(List.of(topic))
                .allTopicNames()
                .get(30, TimeUnit.SECONDS)
                .get(topic)
                .partitions()
                .size();
        Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            request.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        Map<TopicPartition, Long> end = new HashMap<>();
        kafka().admin()
                .listOffsets(request)
                .all()
                .get(30, TimeUnit.SECONDS)
                .forEach((tp, info) -> end.put(tp, info.offset()));
        return end;
    }

    static void join(java.util.concurrent.Future<?> future) {
        try {
            future.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw new AssertionError("background consumer failed", e.getCause());
        } catch (Exception e) {
            throw new AssertionError("background consumer did not finish", e);
        }
    }
}
