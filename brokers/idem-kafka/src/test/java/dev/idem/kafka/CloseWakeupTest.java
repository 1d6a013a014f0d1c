package dev.idem.kafka;

import static dev.idem.kafka.KafkaFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetCommitCallback;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The wakeup of {@code close()} against the real clients of both group protocols: it may land on a blocking call other
 * than the poll it was meant for.
 */
class CloseWakeupTest {

    /**
     * A client whose commits are all synchronous, whose first commit once armed is woken as it starts, and which notes
     * the offset committed before its own close (which commits again in the revocation callback it runs).
     */
    private static final class WokenOnCommit extends KafkaConsumer<byte[], byte[]> {
        final AtomicBoolean armed = new AtomicBoolean();
        final AtomicLong committedBeforeClose = new AtomicLong(-1);
        private volatile boolean closing;

        WokenOnCommit(Map<String, Object> config) {
            super(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        }

        @Override
        public void commitAsync(Map<TopicPartition, OffsetAndMetadata> offsets, OffsetCommitCallback callback) {
            // Left to the final commitSync.
        }

        @Override
        public void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets) {
            if (armed.compareAndSet(true, false)) {
                wakeup();
            }
            super.commitSync(offsets);
            if (!closing) {
                offsets.values().forEach(offset -> committedBeforeClose.set(offset.offset()));
            }
        }

        @Override
        public void close(CloseOptions option) {
            closing = true;
            super.close(option);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"classic", "consumer"})
    void aWakeupLandingOnTheFinalCommit_isOutlasted_andTheFinishedRecordsAreCommitted(String protocol)
            throws Exception {
        String topic = KafkaFixture.topic("wakecommit", 1);
        String group = topic + "-g";
        KafkaFixture.sendMany(topic, "pay-", 3);
        List<String> handled = new CopyOnWriteArrayList<>();
        List<WokenOnCommit> clients = new CopyOnWriteArrayList<>();
        var consumer = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(group, protocol))
                .consumerFactory(config -> {
                    WokenOnCommit client = new WokenOnCommit(config);
                    clients.add(client);
                    return client;
                })
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .handler((key, record) -> {
                    handled.add(key);
                    return Outcome.processed();
                })
                .build()
                .start();
        await().atMost(WAIT).until(() -> handled.size() == 3);
        clients.get(0).armed.set(true);

        consumer.close();

        assertThat(consumer.failure()).isEmpty();
        assertThat(clients.get(0).committedBeforeClose)
                .as("the runner's final commit, retried after the wakeup")
                .hasValue(3L);
        assertThat(KafkaFixture.committed(group).get(new TopicPartition(topic, 0)))
                .extracting(OffsetAndMetadata::offset)
                .isEqualTo(3L);
    }

    /** A client whose first {@code committed} (asked at assignment) is woken as it starts. */
    private static final class WokenOnCommitted extends KafkaConsumer<byte[], byte[]> {
        private final AtomicBoolean armed = new AtomicBoolean(true);

        WokenOnCommitted(Map<String, Object> config) {
            super(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        }

        @Override
        public Map<TopicPartition, OffsetAndMetadata> committed(Set<TopicPartition> partitions) {
            if (armed.compareAndSet(true, false)) {
                wakeup();
            }
            return super.committed(partitions);
        }
    }

    /**
     * Under {@code auto.offset.reset=latest} the assignment callback commits the position of a partition without an
     * offset; a wakeup landing there (a close racing the first assignment) must not skip that commit nor break the
     * assignment.
     */
    @ParameterizedTest
    @ValueSource(strings = {"classic", "consumer"})
    void aWakeupLandingOnTheAssignmentsCommit_isOutlasted(String protocol) throws Exception {
        String topic = KafkaFixture.topic("wakeassign", 1);
        String group = topic + "-g";
        Map<String, Object> props = KafkaFixture.consumerProps(group, protocol);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "latest");
        List<String> handled = new CopyOnWriteArrayList<>();
        var consumer = IdempotentKafkaConsumer.builder(props)
                .consumerFactory(WokenOnCommitted::new)
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .handler((key, record) -> {
                    handled.add(key);
                    return Outcome.processed();
                })
                .build()
                .start();
        try {
            TopicPartition p0 = new TopicPartition(topic, 0);
            await().atMost(WAIT).until(() -> KafkaFixture.committed(group).get(p0) != null);
            KafkaFixture.sendMany(topic, "pay-", 2);

            await().atMost(WAIT).until(() -> handled.size() == 2);
            assertThat(consumer.failure()).isEmpty();
        } finally {
            consumer.close();
        }
    }
}
