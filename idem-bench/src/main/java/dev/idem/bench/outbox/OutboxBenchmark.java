package dev.idem.bench.outbox;

import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.kafka.KafkaProducers;
import dev.idem.outbox.Outbox;
import dev.idem.outbox.OutboxMessage;
import dev.idem.outbox.OutboxRelay;
import dev.idem.outbox.OutboxSchema;
import dev.idem.outbox.kafka.KafkaOutboxPublisher;
import dev.idem.outbox.spi.OutboxPublisher;
import dev.idem.testsupport.EmbeddedKafka;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jspecify.annotations.Nullable;

/**
 * The outbox on the local PostgreSQL and an in-process Kafka broker, in one run:
 *
 * <ol>
 *   <li><b>write overhead</b>: {@code JdbcInbox.handle} (mark + a ledger insert, one transaction) alone, with the
 *       insert an outbox written by hand needs (a message id, the relay's index), and with {@code Outbox.send}, in the
 *       same transaction, one thread, the order rotating every round, median time per handling; then the same from 8
 *       threads at once, handlings per second;
 *   <li><b>relay throughput</b>: {@link OutboxRelay} (Kafka publisher) against a hand-written relay on the same table
 *       and broker ({@code SELECT … FOR UPDATE SKIP LOCKED LIMIT 100}, send every row, flush, {@code UPDATE … SET
 *       sent_at}, commit), each draining the same pre-filled backlog (a fresh table per round), batches of 100;
 *   <li><b>latency</b>: messages committed at a steady rate, the time from each commit to the broker's acknowledgement
 *       of its publication, p50 and p99, with the relay's default poll interval (100 ms) and with 20 ms.
 * </ol>
 *
 * <pre>{@code
 * ./mvnw -q -pl idem-bench -am package -DskipTests
 * java -cp idem-bench/target/benchmarks.jar dev.idem.bench.outbox.OutboxBenchmark [handlings] [backlog] [keys] [rounds] [relay]
 * }</pre>
 *
 * The fifth argument {@code relay} runs the relay row only.
 */
public final class OutboxBenchmark {
    private final EmbeddedKafka kafka;
    private final TestDatabase db;
    private int tables;

    private OutboxBenchmark(EmbeddedKafka kafka, TestDatabase db) {
        this.kafka = kafka;
        this.db = db;
    }

    public static void main(String[] args) throws Exception {
        int handlings = args.length > 0 ? Integer.parseInt(args[0]) : 2_000;
        int backlog = args.length > 1 ? Integer.parseInt(args[1]) : 10_000;
        int keys = args.length > 2 ? Integer.parseInt(args[2]) : 1_000;
        int rounds = args.length > 3 ? Integer.parseInt(args[3]) : 3;
        boolean relayOnly = args.length > 4 && args[4].equals("relay");
        try (EmbeddedKafka kafka = EmbeddedKafka.start();
                TestDatabase db = TestDatabase.postgres(TestServers.postgres(), "outboxbench")) {
            OutboxBenchmark bench = new OutboxBenchmark(kafka, db);
            System.out.printf("load %s%n", load());
            if (!relayOnly) {
                bench.writeOverhead(handlings, rounds);
                bench.concurrentWrites(8, handlings * 2, rounds);
            }
            bench.relayThroughput(backlog, keys, rounds);
            if (!relayOnly) {
                bench.latency(Duration.ofMillis(100), 1_000, 200);
                bench.latency(Duration.ofMillis(20), 1_000, 200);
            }
            System.out.printf("load %s%n", load());
        }
        System.exit(0);
    }

    private void writeOverhead(int handlings, int rounds) throws Exception {
        db.execute("CREATE TABLE ledger (payment VARCHAR(64) NOT NULL, amount BIGINT NOT NULL)");
        JdbcInbox inbox = JdbcInbox.builder(db.dataSource())
                .namespace("w")
                .createTableIfMissing(true)
                .build();
        OutboxSchema.create(db.dataSource(), "bench_write");
        Outbox outbox = Outbox.builder().table("bench_write").build();
        db.execute(HAND_OUTBOX_TABLE);
        db.execute("CREATE INDEX hand_outbox_unsent ON hand_outbox (sent_at, id)");
        Map<String, @Nullable Send> contenders = writeContenders(outbox);
        Map<String, List<Double>> times = new LinkedHashMap<>();
        List<String> names = new ArrayList<>(contenders.keySet());
        for (String name : names) {
            handle(inbox, contenders.get(name), "warm" + names.indexOf(name), handlings / 4);
            times.put(name, new ArrayList<>());
        }
        for (int r = 0; r < rounds; r++) {
            for (int c = 0; c < names.size(); c++) {
                String name = names.get((r + c) % names.size()); // the order rotates every round
                times.get(name)
                        .add(handle(inbox, contenders.get(name), "r" + r + "c" + names.indexOf(name), handlings));
            }
        }
        List<Double> plain = times.get(names.get(0));
        for (String name : names) {
            List<Double> ms = times.get(name);
            System.out.printf(
                    Locale.ROOT,
                    "| write | %s | %.3f ms | rounds %s | %.2f× |%n",
                    name,
                    median(ms),
                    ms,
                    median(ms) / median(plain));
        }
        printPaired("write", times.get(names.get(2)), plain);
        printPaired("write, Outbox.send ÷ hand-written insert", times.get(names.get(2)), times.get(names.get(1)));
    }

    /** The handling alone, with a hand-written outbox insert, with {@code Outbox.send}: a write row's contenders. */
    private static Map<String, @Nullable Send> writeContenders(Outbox outbox) {
        Map<String, @Nullable Send> contenders = new LinkedHashMap<>();
        contenders.put("JdbcInbox.handle, mark + ledger insert", null);
        contenders.put("the same + a hand-written outbox insert", OutboxBenchmark::insertByHand);
        contenders.put("the same + Outbox.send", (c, key) -> outbox.send(c, message(key)));
        return contenders;
    }

    /** What an outbox written by hand needs at the least: a message id for the consumers, an index for its relay. */
    private static final String HAND_OUTBOX_TABLE = "CREATE TABLE hand_outbox (id BIGSERIAL PRIMARY KEY,"
            + " message_id VARCHAR(64) NOT NULL UNIQUE, topic VARCHAR(255) NOT NULL, message_key VARCHAR(255) NOT NULL,"
            + " payload BYTEA NOT NULL, created_at BIGINT NOT NULL, sent_at BIGINT)";

    private static void insertByHand(Connection c, String key) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO hand_outbox"
                + " (message_id, topic, message_key, payload, created_at) VALUES (?, ?, ?, ?, ?)")) {
            ps.setString(1, UUID.randomUUID().toString());
            ps.setString(2, "payments");
            ps.setString(3, key);
            ps.setBytes(4, payload(key));
            ps.setLong(5, System.currentTimeMillis());
            ps.executeUpdate();
        }
    }

    private static OutboxMessage message(String key) {
        return OutboxMessage.to("payments").key(key).payload(payload(key));
    }

    private static byte[] payload(String key) {
        return ("{\"payment\":\"" + key + "\"}").getBytes(StandardCharsets.UTF_8);
    }

    /** A message written in the handler's transaction; none for the plain handling. */
    @FunctionalInterface
    private interface Send {
        void send(Connection c, String key) throws SQLException;
    }

    /**
     * Each round's ratio of its two contenders (which ran back to back) and their median: on a shared machine whose
     * load drifts over the run, a steadier figure than the ratio of the two medians, which may come from different
     * rounds.
     */
    private static void printPaired(String row, List<Double> contender, List<Double> baseline) {
        List<Double> ratios = new ArrayList<>();
        for (int i = 0; i < contender.size(); i++) {
            ratios.add(contender.get(i) / baseline.get(i));
        }
        System.out.printf(
                Locale.ROOT,
                "| %s | per-round ratios %s | median %.2f× |%n",
                row,
                ratios.stream().map(r -> String.format(Locale.ROOT, "%.2f", r)).toList(),
                median(ratios));
    }

    /**
     * The same handlings from {@code threads} threads at once, handlings per second: PostgreSQL takes one cluster-wide
     * lock for every transaction that notifies and holds it through the commit's WAL flush, so notifying commits do not
     * share a flush as concurrent commits otherwise do. One thread does not see it.
     */
    private void concurrentWrites(int threads, int handlings, int rounds) throws Exception {
        JdbcInbox inbox = JdbcInbox.builder(db.dataSource())
                .namespace("c")
                .createTableIfMissing(true)
                .build();
        Map<String, @Nullable Send> contenders =
                writeContenders(Outbox.builder().table("bench_write").build());
        List<String> names = new ArrayList<>(contenders.keySet());
        Map<String, List<Double>> rates = new LinkedHashMap<>();
        names.forEach(name -> rates.put(name, new ArrayList<>()));
        for (int r = -1; r < rounds; r++) { // round -1 warms up
            for (int c = 0; c < names.size(); c++) {
                String name = names.get(Math.floorMod(r + c, names.size())); // the order rotates every round
                Send send = contenders.get(name);
                String prefix = "c" + r + "n" + names.indexOf(name);
                ExecutorService pool = Executors.newFixedThreadPool(threads);
                List<Future<Double>> done = new ArrayList<>();
                long start = System.nanoTime();
                for (int t = 0; t < threads; t++) {
                    String threadPrefix = prefix + "t" + t;
                    done.add(pool.submit(() -> handle(inbox, send, threadPrefix, handlings / threads)));
                }
                for (Future<Double> f : done) {
                    f.get();
                }
                double perSecond = handlings / ((System.nanoTime() - start) / 1e9);
                pool.shutdown();
                if (r >= 0) {
                    rates.get(name).add(perSecond);
                }
            }
        }
        List<Double> plain = rates.get(names.get(0));
        for (String name : names) {
            System.out.printf(
                    Locale.ROOT,
                    "| write, %d threads | %s | %,.0f handlings/s | rounds %s | %.2f× |%n",
                    threads,
                    name,
                    median(rates.get(name)),
                    rounded(rates.get(name)),
                    median(rates.get(name)) / median(plain));
        }
        String row = "write, " + threads + " threads";
        printPaired(row, rates.get(names.get(2)), plain);
        printPaired(row + ", Outbox.send ÷ hand-written insert", rates.get(names.get(2)), rates.get(names.get(1)));
    }

    /**
     * Milliseconds per handling of {@code count} new deliveries, each handling's transaction holding a ledger insert
     * and, unless {@code send} is null, one outgoing message.
     */
    private double handle(JdbcInbox inbox, @Nullable Send send, String prefix, int count) {
        long start = System.nanoTime();
        for (int i = 0; i < count; i++) {
            String key = prefix + "-" + i;
            Outcome o = inbox.handle(Delivery.of(key), c -> {
                try (PreparedStatement ps = c.prepareStatement("INSERT INTO ledger (payment, amount) VALUES (?, 1)")) {
                    ps.setString(1, key);
                    ps.executeUpdate();
                }
                if (send != null) {
                    send.send(c, key);
                }
                return Outcome.processed();
            });
            if (o.type() != Outcome.Type.PROCESSED) {
                throw new IllegalStateException(key + ": " + o);
            }
        }
        return (System.nanoTime() - start) / 1e6 / count;
    }

    private void relayThroughput(int backlog, int keys, int rounds) throws Exception {
        String topic = TestServers.uniquePrefix("outboxbench");
        kafka.createTopic(topic, 4);
        List<Double> relay = new ArrayList<>();
        List<Double> hand = new ArrayList<>();
        try (KafkaOutboxPublisher publisher =
                        KafkaOutboxPublisher.create(Map.of("bootstrap.servers", kafka.bootstrapServers()));
                KafkaProducer<String, byte[]> producer = producer()) {
            drainWithRelay(fill(topic, backlog / 4, keys), publisher); // warm-up
            drainByHand(fill(topic, backlog / 4, keys), producer);
            for (int r = 0; r < rounds; r++) {
                for (int c = 0; c < 2; c++) {
                    boolean relayFirst = r % 2 == 0;
                    String table = fill(topic, backlog, keys);
                    if ((c == 0) == relayFirst) {
                        relay.add(backlog / drainWithRelay(table, publisher));
                    } else {
                        hand.add(backlog / drainByHand(table, producer));
                    }
                }
            }
        }
        double h = median(hand);
        double o = median(relay);
        System.out.printf(
                Locale.ROOT,
                "| relay | hand-written: SKIP LOCKED, send, flush, mark (%d keys) | %,.0f msg/s | rounds %s | 1.00× |%n",
                keys,
                h,
                rounded(hand));
        System.out.printf(
                Locale.ROOT,
                "| relay | OutboxRelay + KafkaOutboxPublisher (%d keys) | %,.0f msg/s | rounds %s | %.2f× |%n",
                keys,
                o,
                rounded(relay),
                o / h);
        printPaired("relay", relay, hand);
    }

    /** A fresh outbox table holding {@code count} unsent messages over {@code keys} keys. */
    private String fill(String topic, int count, int keys) throws SQLException {
        String table = "bench_relay_" + (++tables);
        OutboxSchema.create(db.dataSource(), table);
        Outbox outbox = Outbox.builder().table(table).build();
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            for (int i = 0; i < count; i++) {
                outbox.send(c, OutboxMessage.to(topic).key("k" + (i % keys)).payload("{\"n\":" + i + "}"));
                if (i % 1000 == 999) {
                    c.commit();
                }
            }
            c.commit();
        }
        return table;
    }

    /** Seconds to publish the whole table. */
    private double drainWithRelay(String table, OutboxPublisher publisher) {
        long start = System.nanoTime();
        List<String> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (OutboxRelay relay = OutboxRelay.builder(db.dataSource(), publisher)
                .table(table)
                .listener(new dev.idem.outbox.OutboxListener() {
                    @Override
                    public void publishFailed(
                            dev.idem.outbox.spi.OutboxRecord record,
                            Throwable failure,
                            boolean refused,
                            java.time.Instant retryAt) {
                        failures.add(record.messageId() + ": " + failure);
                    }
                })
                .build()) {
            while (relay.relayOnce() > 0) {
                // one batch per call
            }
            var stats = relay.stats();
            if (stats.unsent() != 0) {
                throw new IllegalStateException("the relay left " + stats + " in " + table + "; failures "
                        + failures.subList(0, Math.min(3, failures.size())));
            }
        }
        return (System.nanoTime() - start) / 1e9;
    }

    /** Seconds for the relay a user would write by hand to publish the whole table. */
    private double drainByHand(String table, KafkaProducer<String, byte[]> producer) throws Exception {
        long start = System.nanoTime();
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            while (true) {
                List<Long> ids = new ArrayList<>();
                List<Future<RecordMetadata>> acks = new ArrayList<>();
                try (PreparedStatement ps = c.prepareStatement("SELECT id, message_id, destination, message_key,"
                        + " payload FROM " + table + " WHERE sent_at IS NULL ORDER BY id LIMIT 100 FOR UPDATE SKIP"
                        + " LOCKED")) {
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            ids.add(rs.getLong(1));
                            ProducerRecord<String, byte[]> r =
                                    new ProducerRecord<>(rs.getString(3), rs.getString(4), rs.getBytes(5));
                            r.headers()
                                    .add(
                                            KafkaProducers.KEY_HEADER,
                                            rs.getString(2).getBytes(StandardCharsets.UTF_8));
                            acks.add(producer.send(r));
                        }
                    }
                }
                if (ids.isEmpty()) {
                    c.commit();
                    break;
                }
                producer.flush();
                for (Future<RecordMetadata> ack : acks) {
                    ack.get(30, TimeUnit.SECONDS);
                }
                try (PreparedStatement ps =
                        c.prepareStatement("UPDATE " + table + " SET sent_at = ? WHERE id = ANY (?)")) {
                    ps.setLong(1, System.currentTimeMillis());
                    ps.setArray(2, c.createArrayOf("bigint", ids.toArray()));
                    ps.executeUpdate();
                }
                c.commit();
            }
        }
        return (System.nanoTime() - start) / 1e9;
    }

    private KafkaProducer<String, byte[]> producer() {
        Map<String, Object> settings = new HashMap<>(KafkaProducers.recommendedSettings());
        settings.put("bootstrap.servers", kafka.bootstrapServers());
        settings.put("linger.ms", 5);
        return new KafkaProducer<>(settings, new StringSerializer(), new ByteArraySerializer());
    }

    /** Commits {@code count} messages at {@code perSecond}, each its own transaction; prints commit → ack p50/p99. */
    private void latency(Duration pollInterval, int count, int perSecond) throws Exception {
        String topic = TestServers.uniquePrefix("outboxlat");
        kafka.createTopic(topic, 4);
        String table = "bench_latency_" + (++tables);
        OutboxSchema.create(db.dataSource(), table);
        Outbox outbox = Outbox.builder().table(table).build();
        Map<String, Long> committed = new ConcurrentHashMap<>();
        Map<String, Long> acked = new ConcurrentHashMap<>();
        try (KafkaOutboxPublisher kafkaPublisher =
                        KafkaOutboxPublisher.create(Map.of("bootstrap.servers", kafka.bootstrapServers()));
                OutboxRelay relay = OutboxRelay.builder(
                                db.dataSource(),
                                r -> kafkaPublisher
                                        .publish(r)
                                        .thenRun(() -> acked.putIfAbsent(r.messageId(), System.nanoTime())))
                        .table(table)
                        .pollInterval(pollInterval)
                        .build()
                        .start();
                Connection c = db.connection()) {
            c.setAutoCommit(false);
            long pause = TimeUnit.SECONDS.toNanos(1) / perSecond;
            long next = System.nanoTime();
            for (int i = 0; i < count; i++) {
                String id = outbox.send(
                        c, OutboxMessage.to(topic).key("k" + (i % 100)).payload("{\"n\":" + i + "}"));
                c.commit();
                committed.put(id, System.nanoTime());
                next += pause;
                LockSupport.parkNanos(next - System.nanoTime());
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (acked.size() < count && System.nanoTime() < deadline) {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
            }
        }
        List<Double> latencies = new ArrayList<>();
        committed.forEach((id, at) -> {
            Long ack = acked.get(id);
            if (ack != null) {
                latencies.add((ack - at) / 1e6);
            }
        });
        Collections.sort(latencies);
        System.out.printf(
                Locale.ROOT,
                "| latency | commit → broker ack, %d msg/s, pollInterval %d ms | p50 %.1f ms, p99 %.1f ms | %d of %d |%n",
                perSecond,
                pollInterval.toMillis(),
                percentile(latencies, 0.50),
                percentile(latencies, 0.99),
                latencies.size(),
                count);
    }

    private static double percentile(List<Double> sorted, double p) {
        return sorted.isEmpty()
                ? Double.NaN
                : sorted.get((int) Math.min(sorted.size() - 1, Math.floor(p * sorted.size())));
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        return sorted.get(sorted.size() / 2);
    }

    private static List<Long> rounded(List<Double> values) {
        return values.stream().map(Math::round).toList();
    }

    private static String load() {
        try {
            return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg"))
                    .trim();
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }
}
