package dev.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.jdbc.JdbcInbox;
import dev.idem.testsupport.PaymentBank;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
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
    private static final int PAYMENTS = 1000;
    private static final int KILLS = 8;
    private static final int PARTITIONS = 4;
    /** How long the producer spreads the payments over. */
    private static final Duration PRODUCING = Duration.ofSeconds(25);
    /** The drain fails when no record was committed for this long. */
    private static final Duration STALL = Duration.ofSeconds(120);
    /** The drain's outer bound while records still move (a machine at load 30+ drains ~10x slower). */
    private static final Duration DRAIN_CAP = Duration.ofMinutes(8);

    private static final Duration DRAIN_CHECK = Duration.ofSeconds(5);
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
        AtomicInteger kills = new AtomicInteger();
        AtomicInteger killsInTransaction = new AtomicInteger();
        List<Child> children = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                children.add(Child.start(topic, group, protocol, bank.database().url()));
            }
            Thread producer = new Thread(() -> produce(topic, account, sent), "kill9-producer");
            producer.start();
            // The storm starts once the group is up and debiting, so that kills hit working consumers.
            await().atMost(Duration.ofSeconds(90)).until(() -> bank.ledgerRows(account) > 0);
            Random random = new Random();
            for (int k = 0; k < KILLS; k++) {
                int victim = random.nextInt(children.size());
                Child child = children.get(victim);
                // Half of the kills wait for the victim to open a debit's transaction and strike right then; the
                // others strike at a random moment of its life (starting, joining, polling, committing).
                if (random.nextBoolean()) {
                    if (child.awaitTransaction(Duration.ofSeconds(10))) {
                        killsInTransaction.incrementAndGet();
                    }
                } else {
                    await().pollDelay(Duration.ofMillis(300 + random.nextInt(2000)))
                            .until(() -> true);
                }
                child.kill();
                kills.incrementAndGet();
                children.set(
                        victim,
                        Child.start(topic, group, protocol, bank.database().url()));
            }
            producer.join(Duration.ofSeconds(60).toMillis());
            assertThat(producer.isAlive()).isFalse();
            awaitDrained(group, topic, account);
        } finally {
            children.forEach(Child::kill);
        }
        System.out.printf(
                "kill -9 (%s): %d payments, %d kills (%d inside a transaction)%n",
                protocol, sent.size(), kills.get(), killsInTransaction.get());
        assertThat(query("SELECT COUNT(*) FROM (SELECT message_key FROM ledger WHERE account_id = '" + account
                        + "' GROUP BY message_key HAVING COUNT(*) > 1) d"))
                .as("payments debited twice")
                .isZero();
        assertThat(query("SELECT COUNT(DISTINCT message_key) FROM ledger WHERE account_id = '" + account + "'"))
                .as("payments debited (the rest are lost)")
                .isEqualTo(sent.size());
        assertThat(bank.balance(account)).isEqualTo(1_000_000 - sent.size());
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

    /**
     * Waits until every partition is committed to its end. The bound is on progress, not on total time: it fails when
     * the backlog has not shrunk for {@link #STALL} (a stuck partition, a consumer that stopped), however loaded the
     * machine; a slow but moving drain only ends at {@link #DRAIN_CAP}.
     */
    private static void awaitDrained(String group, String topic, String account) throws Exception {
        long start = System.nanoTime();
        long lastProgress = start;
        long fewestBehind = Long.MAX_VALUE;
        while (true) {
            Map<TopicPartition, Long> behind = behind(group, topic);
            long total = behind.values().stream().mapToLong(Long::longValue).sum();
            long now = System.nanoTime();
            System.out.printf(
                    "kill -9 drain: %d records behind %s, %d ledger rows, load %s%n",
                    total, behind, bank.ledgerRows(account), loadAverage());
            if (total == 0) {
                return;
            }
            if (total < fewestBehind) {
                fewestBehind = total;
                lastProgress = now;
            }
            boolean stalled = now - lastProgress > STALL.toNanos();
            if (stalled || now - start > DRAIN_CAP.toNanos()) {
                throw new AssertionError((stalled
                                ? "stalled: nothing committed for " + STALL.toSeconds() + " s"
                                : "not drained in " + DRAIN_CAP.toMinutes() + " min, though moving")
                        + "; behind per partition " + behind + ", ledger rows " + bank.ledgerRows(account)
                        + ", load " + loadAverage() + "; children's stderr in " + LOG.toAbsolutePath());
            }
            Thread.sleep(DRAIN_CHECK.toMillis());
        }
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

    private static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).trim();
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }

    private static long query(String sql) throws Exception {
        try (Connection c = bank.database().dataSource().getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** A consumer JVM on the test's classpath, its stdout read for {@code TX} lines. */
    private static final class Child {
        private final Process process;
        private final AtomicBoolean inTransaction = new AtomicBoolean();
        private final Object lines = new Object();

        private Child(Process process) {
            this.process = process;
            Thread reader = new Thread(this::read, "kill9-child-" + process.pid());
            reader.setDaemon(true);
            reader.start();
        }

        static Child start(String topic, String group, String protocol, String jdbcUrl) throws Exception {
            String java =
                    Path.of(System.getProperty("java.home"), "bin", "java").toString();
            ProcessBuilder builder = new ProcessBuilder(
                            java,
                            "-Xmx160m",
                            "-XX:TieredStopAtLevel=1",
                            "-cp",
                            System.getProperty("java.class.path"),
                            KillNineConsumer.class.getName(),
                            KafkaFixture.kafka().bootstrapServers(),
                            topic,
                            group,
                            protocol,
                            jdbcUrl,
                            topic)
                    .redirectError(ProcessBuilder.Redirect.appendTo(LOG.toFile()));
            builder.environment().remove("JAVA_TOOL_OPTIONS");
            return new Child(builder.start());
        }

        private void read() {
            try (BufferedReader in =
                    new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.startsWith("TX ")) {
                        synchronized (lines) {
                            inTransaction.set(true);
                            lines.notifyAll();
                        }
                    }
                }
            } catch (java.io.IOException e) {
                // the process was killed
            }
        }

        /** Waits for the next {@code TX} line: right after it, a debit's transaction is open. */
        boolean awaitTransaction(Duration timeout) throws InterruptedException {
            long deadline = System.nanoTime() + timeout.toNanos();
            synchronized (lines) {
                inTransaction.set(false);
                while (!inTransaction.get()) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        return false;
                    }
                    TimeUnit.NANOSECONDS.timedWait(lines, left);
                }
                return true;
            }
        }

        /** SIGKILL: no shutdown hook, no close, no commit. */
        void kill() {
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
