package dev.idem.kafka;

import static dev.idem.kafka.KafkaFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Issue 14 item 12: per-key parallelism within a partition, same key in order, commits still in offset order. */
class KeyOrderingTest {

    @ParameterizedTest
    @ValueSource(strings = {"classic", "consumer"})
    void keyOrdering_otherKeysRunWhileOneIsHeld_sameKeyStaysInOrder_commitWaitsForTheHeldRecord(String protocol)
            throws Exception {
        String topic = KafkaFixture.topic("keyorder", 1);
        String group = topic + "-g";
        List<String> keys = List.of("A", "B", "A", "B", "C");
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (String key : keys) {
                KafkaFixture.send(producer, topic, 0, key, "v");
            }
        }
        CountDownLatch firstAHeld = new CountDownLatch(1);
        CountDownLatch releaseA = new CountDownLatch(1);
        List<String> handled = new CopyOnWriteArrayList<>();
        try (var consumer = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(group, protocol))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .ordering(Ordering.KEY)
                .workers(3)
                .handler((key, record) -> {
                    if (record.offset() == 0) {
                        firstAHeld.countDown();
                        releaseA.await(WAIT.toSeconds(), TimeUnit.SECONDS);
                    }
                    handled.add(key + "@" + record.offset());
                    return Outcome.processed();
                })
                .build()
                .start()) {
            assertThat(firstAHeld.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            await().atMost(WAIT).until(() -> handled.containsAll(List.of("B@1", "B@3", "C@4")));
            assertThat(handled).as("A's second copy waits for its first").doesNotContain("A@2");
            OffsetAndMetadata committed = KafkaFixture.committed(group).get(new TopicPartition(topic, 0));
            assertThat(committed == null ? 0 : committed.offset())
                    .as("nothing past the held record is committed")
                    .isZero();
            releaseA.countDown();
            KafkaFixture.awaitAllCommitted(group, topic);
        }
        assertThat(handled).containsSubsequence("B@1", "B@3").containsSubsequence("A@0", "A@2");
        assertThat(handled.indexOf("A@0")).isGreaterThan(handled.indexOf("C@4"));
    }
}
