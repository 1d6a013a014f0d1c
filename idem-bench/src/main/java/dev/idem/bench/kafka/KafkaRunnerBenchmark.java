package dev.idem.bench.kafka;

import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.kafka.IdempotentKafkaConsumer;
import dev.idem.kafka.KafkaProducers;
import dev.idem.kafka.KeyExtractor;
import dev.idem.testsupport.EmbeddedKafka;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Kafka runner ({@link IdempotentKafkaConsumer}) against a plain kafka-clients loop, on one in-process broker, in
 * one run, on both group protocols:
 *
 * <ol>
 *   <li><b>no-op</b>: the runner with a no-op handler vs a plain {@code poll} / {@code commitAsync} loop;
 *   <li><b>PostgreSQL inbox</b>: the runner with a {@link JdbcInbox} handler (dedup row, debit, ledger row, one
 *       transaction per record) vs a hand-written consumer that writes the same dedup row ({@code INSERT ... ON
 *       CONFLICT DO NOTHING}) and the same two statements in the same transaction, one record at a time;
 *   <li><b>batch vs per record</b>: the runner's batch mode ({@code JdbcInbox.handleBatch}, one transaction per batch)
 *       on the same PostgreSQL workload.
 * </ol>
 *
 * Every contender reads the same pre-produced topic (1 partition, 1 worker: per-record overhead, not parallelism) in
 * its own consumer group; a round's time runs from its first record to its last one handled; rounds alternate the
 * contenders and the table shows medians. Run:
 *
 * <pre>{@code
 * ./mvnw -q -pl idem-bench -am package -DskipTests
 * java -cp idem-bench/target/benchmarks.jar dev.idem.bench.kafka.KafkaRunnerBenchmark [noopRecords] [dbRecords] [rounds]
 * }</pre>
 *
 * PostgreSQL is found like the tests find it ({@code IDEM_PG_URL}, else 127.0.0.1:5432); a fresh schema is dropped
 * at the end.
 */
public final class KafkaRunnerBenchmark {
    private final EmbeddedKafka kafka;
    private final TestDatabase db;
    private int groups;

    private KafkaRunnerBenchmark(EmbeddedKafka kafka, TestDatabase db) {
        this.kafka = kafka;
        this.db = db;
    }

    public static void main(String[] args) throws Exception {
        int noopRecords = args.length > 0 ? Integer.parseInt(args[0]) : 100_000;
        int dbRecords = args.length > 1 ? Integer.parseInt(args[1]) : 5_000;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 3;
        try (EmbeddedKafka kafka = EmbeddedKafka.start();
                TestDatabase db = TestDatabase.postgres(TestServers.postgres(), "kafkabench")) {
            new KafkaRunnerBenchmark(kafka, db).run(noopRecords, dbRecords, rounds);
        }
        System.exit(0);
    }

    private void run(int noopRecords, int dbRecords, int rounds) throws Exception {
        db.execute("CREATE TABLE account (id VARCHAR(100) PRIMARY KEY, balance BIGINT NOT NULL)");
        db.execute("CREATE TABLE ledger (id BIGSERIAL PRIMARY KEY, account_id VARCHAR(100) NOT NULL,"
                + " message_key VARCHAR(200) NOT NULL, amount BIGINT NOT NULL)");
        db.execute("CREATE TABLE processed (id VARCHAR(200) PRIMARY KEY)");
        db.execute("INSERT INTO account (id, balance) VALUES ('acc', 0)");
        String noopTopic = produce("noop", noopRecords);
        String dbTopic = produce("db", dbRecords);
        System.out.printf(
                Locale.ROOT,
                "| protocol | workload | contender | records/s (median of %d) | rounds | ratio |%n|---|---|---|---|---|---|%n",
                rounds);
        for (String protocol : List.of("classic", "consumer")) {
            double plain = median(rounds, () -> plainNoop(noopTopic, protocol, noopRecords));
            double runner = median(rounds, () -> runnerNoop(noopTopic, protocol, noopRecords));
            row(protocol, "no-op handler", "plain kafka-clients loop", plain, 1.0);
            row(protocol, "no-op handler", "runner", runner, runner / plain);
            double hand = median(rounds, () -> handWritten(dbTopic, protocol, dbRecords));
            double inbox = median(rounds, () -> runnerInbox(dbTopic, protocol, dbRecords, false));
            double batch = median(rounds, () -> runnerInbox(dbTopic, protocol, dbRecords, true));
            row(protocol, "PostgreSQL dedup row", "hand-written consumer, 1 tx per record", hand, 1.0);
            row(protocol, "PostgreSQL dedup row", "runner + JdbcInbox, 1 tx per record", inbox, inbox / hand);
            row(protocol, "PostgreSQL dedup row", "runner + JdbcInbox.handleBatch (batch mode)", batch, batch / inbox);
        }
        System.out.println("(ratios: runner / plain loop, runner / hand-written, batch / per-record runner)");
    }

    private static void row(String protocol, String workload, String contender, double perSecond, double ratio) {
        System.out.printf(
                Locale.ROOT, "| %s | %s | %s | %,.0f | | %.2f× |%n", protocol, workload, contender, perSecond, ratio);
    }

    @FunctionalInterface
    private interface Round {
        /** Records per second of one round. */
        double run() throws Exception;
    }

    private static double median(int rounds, Round round) throws Exception {
        List<Double> results = new ArrayList<>();
        for (int i = 0; i < rounds; i++) {
            results.add(round.run());
        }
        results.sort(Double::compare);
        System.err.println("  rounds: " + results);
        return results.get(results.size() / 2);
    }

    private String produce(String name, int records) throws Exception {
        String topic = TestServers.uniquePrefix("bench" + name);
        kafka.createTopic(topic, 1);
        kafka.createTopic(topic + "-dlt", 1);
        Map<String, Object> props = new HashMap<>(KafkaProducers.recommendedSettings());
        props.put("bootstrap.servers", kafka.bootstrapServers());
        props.put("linger.ms", 5);
        props.put("batch.size", 262_144);
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < records; i++) {
                producer.send(KafkaProducers.withKey(new ProducerRecord<>(topic, 0, null, "acc:1"), "pay-" + i));
            }
            producer.flush();
        }
        return topic;
    }

    private Map<String, Object> consumerProps(String protocol) {
        Map<String, Object> props = new HashMap<>();
        props.put("bootstrap.servers", kafka.bootstrapServers());
        props.put("group.id", "bench-" + protocol + "-" + (++groups) + "-" + System.nanoTime());
        props.put("group.protocol", protocol);
        props.put("auto.offset.reset", "earliest");
        props.put("enable.auto.commit", false);
        return props;
    }

    /** Times a round from its first record to its last. */
    private static final class Clock {
        private final AtomicLong first = new AtomicLong();
        private final AtomicLong handled = new AtomicLong();
        private volatile long last;

        void record(int count) {
            long now = System.nanoTime();
            first.compareAndSet(0, now);
            if (handled.addAndGet(count) > 0) {
                last = now;
            }
        }

        long handled() {
            return handled.get();
        }

        double perSecond() {
            return handled.get() / ((last - first.get()) / 1e9);
        }
    }

    private double plainNoop(String topic, String protocol, int records) {
        Clock clock = new Clock();
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(consumerProps(protocol), new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            while (clock.handled() < records) {
                ConsumerRecords<String, String> polled = consumer.poll(Duration.ofMillis(100));
                for (ConsumerRecord<String, String> record : polled) {
                    key(record); // read the key as the runner does
                    clock.record(1);
                }
                if (!polled.isEmpty()) {
                    consumer.commitAsync();
                }
            }
            consumer.commitSync();
        }
        return clock.perSecond();
    }

    private double runnerNoop(String topic, String protocol, int records) throws Exception {
        Clock clock = new Clock();
        try (var runner = IdempotentKafkaConsumer.builder(consumerProps(protocol))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .handler((key, record) -> {
                    clock.record(1);
                    return Outcome.processed();
                })
                .build()
                .start()) {
            awaitHandled(clock::handled, records);
        }
        return clock.perSecond();
    }

    private double handWritten(String topic, String protocol, int records) throws Exception {
        Clock clock = new Clock();
        DataSource pool = db.dataSource();
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(consumerProps(protocol), new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            String namespace = "hand-" + System.nanoTime() + ":";
            while (clock.handled() < records) {
                ConsumerRecords<String, String> polled = consumer.poll(Duration.ofMillis(100));
                for (ConsumerRecord<String, String> record : polled) {
                    String key = namespace + key(record);
                    try (Connection c = pool.getConnection()) {
                        c.setAutoCommit(false);
                        try (PreparedStatement mark =
                                c.prepareStatement("INSERT INTO processed (id) VALUES (?) ON CONFLICT DO NOTHING")) {
                            mark.setString(1, key);
                            if (mark.executeUpdate() == 1) {
                                debit(c, key);
                            }
                            c.commit();
                        } catch (SQLException e) {
                            c.rollback();
                            throw e;
                        }
                    }
                    clock.record(1);
                }
                if (!polled.isEmpty()) {
                    consumer.commitAsync();
                }
            }
            consumer.commitSync();
        }
        return clock.perSecond();
    }

    private double runnerInbox(String topic, String protocol, int records, boolean batch) throws Exception {
        Clock clock = new Clock();
        JdbcInbox inbox = JdbcInbox.builder(db.dataSource())
                .namespace("inbox" + (++groups))
                .createTableIfMissing(true)
                .build();
        var builder = IdempotentKafkaConsumer.builder(consumerProps(protocol))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER));
        if (batch) {
            builder.batchHandler(
                    records1 -> {
                        List<Delivery> deliveries =
                                records1.stream().map(r -> Delivery.of(r.key())).toList();
                        List<Outcome> outcomes = inbox.handleBatch(deliveries, (c, fresh) -> {
                            debitAll(
                                    c,
                                    fresh.stream()
                                            .map(context -> context.delivery().key())
                                            .toList());
                            return Collections.nCopies(fresh.size(), Outcome.processed());
                        });
                        clock.record(records1.size());
                        return outcomes;
                    },
                    500);
        } else {
            builder.handler((key, record) -> {
                Outcome outcome = inbox.handle(Delivery.of(key), c -> {
                    debit(c, key);
                    return Outcome.processed();
                });
                clock.record(1);
                return outcome;
            });
        }
        try (var runner = builder.build().start()) {
            awaitHandled(clock::handled, records);
        }
        return clock.perSecond();
    }

    /** The business writes of a batch, sent as JDBC batches. */
    private static void debitAll(Connection c, List<String> keys) throws SQLException {
        try (PreparedStatement update =
                        c.prepareStatement("UPDATE account SET balance = balance - 1 WHERE id = 'acc'");
                PreparedStatement insert = c.prepareStatement(
                        "INSERT INTO ledger (account_id, message_key, amount) VALUES ('acc', ?, 1)")) {
            for (String key : keys) {
                update.addBatch();
                insert.setString(1, key);
                insert.addBatch();
            }
            update.executeBatch();
            insert.executeBatch();
        }
    }

    private static void debit(Connection c, String key) throws SQLException {
        try (PreparedStatement update =
                        c.prepareStatement("UPDATE account SET balance = balance - 1 WHERE id = 'acc'");
                PreparedStatement insert = c.prepareStatement(
                        "INSERT INTO ledger (account_id, message_key, amount) VALUES ('acc', ?, 1)")) {
            update.executeUpdate();
            insert.setString(1, key);
            insert.executeUpdate();
        }
    }

    private static void awaitHandled(LongSupplier handled, int records) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(10);
        while (handled.getAsLong() < records) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("only " + handled.getAsLong() + " of " + records + " handled");
            }
            Thread.sleep(5);
        }
    }

    private static String key(ConsumerRecord<String, String> record) {
        return new String(
                record.headers().lastHeader(KafkaProducers.KEY_HEADER).value(),
                java.nio.charset.StandardCharsets.UTF_8);
    }
}
