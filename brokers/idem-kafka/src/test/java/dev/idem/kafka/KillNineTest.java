package dev.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.jdbc.JdbcInbox;
import dev.idem.testsupport.ChildJvm;
import dev.idem.testsupport.KillNineStorm;
import dev.idem.testsupport.PaymentBank;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The issue-14 proof under real crashes: three consumer JVMs in one group ({@link KillNineConsumer}: {@code JdbcInbox}
 * + the runner on PostgreSQL), SIGKILLed at random moments (a share of them while a debit's transaction is open) and
 * restarted, while a producer sends payments, sends some of them to a second partition at the same instant, and
 * resends others seconds later. Then the SQL verdict: no payment debited twice, none lost, nothing dead-lettered.
 */
class KillNineTest {
    private static final int PAYMENTS = 500;
    private static final int KILLS = 8;
    private static final int PARTITIONS = 4;
    /** How long the producer spreads the payments over. */
    private static final Duration PRODUCING = Duration.ofSeconds(12);
    /** The drain fails when no record was committed for this long. */
    private static final Duration STALL = Duration.ofSeconds(120);
    /** The drain's outer bound while records still move (a machine at load 30+ drains ~10x slower). */
    private static final Duration DRAIN_CAP = Duration.ofMinutes(8);
    /** The children's stderr, for a failing run. */
    private static final Path LOG = Path.of("target", "kill9-children.log");

    static PaymentBank bank;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("KillNineTest");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    @ParameterizedTest
    @ValueSource(strings = {"classic", "consumer"})
    void consumersKilledAtRandom_whileCopiesArrive_noPaymentDoubled_noneLost(String protocol) throws Exception {
        String topic = KafkaFixture.topic("kill9" + protocol, PARTITIONS);
        String group = topic + "-g";
        String account = topic + "-acc";
        bank.open(account, 1_000_000);
        JdbcInbox.builder(bank.database().dataSource())
                .namespace(topic)
                .createTableIfMissing(true)
                .build();
        Set<String> sent = ConcurrentHashMap.newKeySet();
        try (KillNineStorm storm = KillNineStorm.start(
                3, () -> child(topic, group, protocol, bank.database().url()))) {
            Thread producer = new Thread(() -> produce(topic, account, sent), "kill9-producer");
            producer.start();
            // The storm starts once the group is up and debiting, so that kills hit working consumers.
            await().atMost(Duration.ofSeconds(90)).until(() -> bank.ledgerRows(account) > 0);
            storm.strike(KILLS, Duration.ofSeconds(10), Duration.ofSeconds(2));
            producer.join(Duration.ofSeconds(60).toMillis());
            assertThat(producer.isAlive()).isFalse();
            KillNineStorm.awaitDrained(
                    STALL,
                    DRAIN_CAP,
                    Duration.ofSeconds(5),
                    () -> behind(group, topic).values().stream()
                            .mapToLong(Long::longValue)
                            .sum(),
                    () -> "behind per partition " + behind(group, topic) + ", ledger rows " + bank.ledgerRows(account)
                            + "; children's stderr in " + LOG.toAbsolutePath());
            storm.report("Kafka " + protocol, sent.size());
        }
        KillNineStorm.assertEachDebitedOnce(bank, account, 1_000_000, sent.size());
        assertThat(KafkaFixture.readAll(topic + "-dlt")).isEmpty();
    }

    /**
     * Payments {@code pay-i} over {@link #PRODUCING}: every 7th also sent to the next partition at the same instant, every
     * 11th sent again about two seconds later.
     */
    private static void produce(String topic, String account, Set<String> sent) {
        long pause = PRODUCING.toNanos() * 8 / 10 / PAYMENTS;
        List<Integer> resend = new ArrayList<>();
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int i = 0; i < PAYMENTS; i++) {
                String key = "pay-" + i;
                int partition = i % PARTITIONS;
                producer.send(record(topic, partition, key, account));
                if (i % 7 == 0) {
                    producer.send(record(topic, (partition + 1) % PARTITIONS, key, account));
                }
                if (i % 11 == 0) {
                    resend.add(i);
                }
                int due = i - (int) (Duration.ofSeconds(2).toNanos() / pause);
                while (!resend.isEmpty() && resend.get(0) <= due) {
                    int old = resend.remove(0);
                    producer.send(record(topic, (old + 2) % PARTITIONS, "pay-" + old, account));
                }
                sent.add(key);
                java.util.concurrent.locks.LockSupport.parkNanos(pause);
            }
            for (int old : resend) {
                producer.send(record(topic, (old + 2) % PARTITIONS, "pay-" + old, account));
            }
            producer.flush();
        }
    }

    private static ProducerRecord<String, String> record(String topic, int partition, String key, String account) {
        return KafkaProducers.withKey(new ProducerRecord<>(topic, partition, null, account + ":1"), key);
    }

    /** Records not committed yet, per partition. */
    private static Map<TopicPartition, Long> behind(String group, String topic) throws Exception {
        var committed = KafkaFixture.committed(group);
        Map<TopicPartition, Long> behind = new TreeMap<>(Comparator.comparingInt(TopicPartition::partition));
        for (var end : KafkaFixture.endOffsets(topic).entrySet()) {
            var offset = committed.get(end.getKey());
            behind.put(end.getKey(), end.getValue() - (offset == null ? 0 : offset.offset()));
        }
        return behind;
    }

    private static ChildJvm child(String topic, String group, String protocol, String jdbcUrl) throws Exception {
        return ChildJvm.start(
                KillNineConsumer.class,
                LOG,
                KafkaFixture.kafka().bootstrapServers(),
                topic,
                group,
                protocol,
                jdbcUrl,
                topic);
    }
}
