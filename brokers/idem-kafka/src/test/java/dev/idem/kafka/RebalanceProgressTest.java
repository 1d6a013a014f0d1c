package dev.idem.kafka;

import static dev.idem.kafka.KafkaFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** What a partition's next owner gets: every finished record committed, nothing skipped. */
class RebalanceProgressTest {

    /**
     * Issue 14 item 2: under {@code auto.offset.reset=latest}, a record retrying when its partition moved (nothing
     * committed yet) was skipped by the next owner, which started at the end.
     */
    @ParameterizedTest
    @ValueSource(strings = {"classic", "consumer"})
    void latestReset_recordRetryingWhenItsPartitionMoves_isHandledByTheNextOwner(String protocol) throws Exception {
        String topic = KafkaFixture.topic("latest", 1);
        String group = topic + "-g";
        CountDownLatch failing = new CountDownLatch(1);
        var first = IdempotentKafkaConsumer.builder(latest(group, protocol))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .retryPolicy(KafkaFixture.FAST_RETRY)
                .handler((key, record) -> {
                    failing.countDown();
                    throw new IllegalStateException("downstream unavailable");
                })
                .build()
                .start();
        try {
            await().atMost(WAIT).until(() -> first.assignment().size() == 1);
            try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
                KafkaFixture.send(producer, topic, 0, "pay-1", "v");
            }
            assertThat(failing.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        } finally {
            first.close();
        }
        List<String> seen = new CopyOnWriteArrayList<>();
        try (var second = IdempotentKafkaConsumer.builder(latest(group, protocol))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .handler((key, record) -> {
                    seen.add(key);
                    return Outcome.processed();
                })
                .build()
                .start()) {
            KafkaFixture.awaitAllCommitted(group, topic);
        }
        assertThat(seen).containsExactly("pay-1");
    }

    private static Map<String, Object> latest(String group, String protocol) {
        Map<String, Object> props = new HashMap<>(KafkaFixture.consumerProps(group, protocol));
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "latest");
        return props;
    }

    /**
     * Issue 14 item 3: progress was reported per poll batch, so a revocation redelivered every record of the batch in
     * hand, finished or not. Each finished record is committed on revocation. Two partitions, each held by the old
     * owner at offset 10; the new member takes one of them (range assignor, or the consumer protocol's sticky
     * spread) and must start it at 10.
     */
    @ParameterizedTest
    @ValueSource(strings = {"classic", "consumer"})
    void revocation_commitsEveryRecordFinishedBeforeIt(String protocol) throws Exception {
        String topic = KafkaFixture.topic("revokeprogress", 2);
        String group = topic + "-g";
        KafkaFixture.sendMany(topic, 0, "a-", 30);
        KafkaFixture.sendMany(topic, 1, "b-", 30);
        CountDownLatch bothAtTen = new CountDownLatch(2);
        CountDownLatch release = new CountDownLatch(1);
        Map<String, Object> oldOwnerProps = new HashMap<>(KafkaFixture.consumerProps(group, protocol));
        oldOwnerProps.put(ConsumerConfig.CLIENT_ID_CONFIG, "z-" + group);
        Map<String, Object> newOwnerProps = new HashMap<>(KafkaFixture.consumerProps(group, protocol));
        newOwnerProps.put(ConsumerConfig.CLIENT_ID_CONFIG, "a-" + group);
        var oldOwner = IdempotentKafkaConsumer.builder(oldOwnerProps)
                .topics(topic)
                .workers(2)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .handler((key, record) -> {
                    if (record.offset() == 10) {
                        bothAtTen.countDown();
                        release.await(WAIT.toSeconds(), TimeUnit.SECONDS);
                    }
                    return Outcome.processed();
                })
                .build()
                .start();
        Map<Integer, List<Long>> seen = new java.util.concurrent.ConcurrentHashMap<>();
        try (var newOwner = IdempotentKafkaConsumer.builder(newOwnerProps)
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .handler((key, record) -> {
                    seen.computeIfAbsent(record.partition(), p -> new CopyOnWriteArrayList<>())
                            .add(record.offset());
                    return Outcome.processed();
                })
                .build()) {
            assertThat(bothAtTen.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            newOwner.start();
            await().atMost(WAIT).until(() -> seen.values().stream().anyMatch(offsets -> offsets.contains(29L)));
            assertThat(seen).hasSize(1);
            List<Long> offsets = seen.values().iterator().next();
            assertThat(offsets.get(0))
                    .as("the records before the one in hand were committed")
                    .isEqualTo(10L);
        } finally {
            release.countDown();
            oldOwner.close();
        }
    }
}
