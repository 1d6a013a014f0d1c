package dev.idem.demo.samples;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.kafka.IdempotentKafkaConsumer;
import dev.idem.kafka.KafkaProducers;
import dev.idem.kafka.KeyExtractor;
import dev.idem.outbox.Outbox;
import dev.idem.outbox.OutboxMessage;
import dev.idem.outbox.OutboxRelay;
import dev.idem.outbox.kafka.KafkaOutboxPublisher;
import dev.idem.outbox.spi.OutboxPublisher;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One process of the lab's two-stage flow ({@code --flow two-stage}), which kills it with {@code kill -9} and starts
 * it again. {@code --role payments --server {bootstrap} --orders T --events T --jdbc URL}:
 *
 * <ul>
 *   <li>{@code payments}: consumes the orders topic through a {@link JdbcInbox} (key: the order id in {@code
 *       idem-key}); in the mark's transaction, records the payment and sends "payment completed" through the {@link
 *       Outbox} (key: the customer, so that a customer's events keep their order);
 *   <li>{@code relay}: an {@link OutboxRelay} publishing the outbox to the events topic with the Kafka publisher;
 *   <li>{@code shipping}: consumes the events topic (key: the outbox message id in {@code idem-key}) through its own
 *       inbox, or with {@code --guard none} through none (the unguarded variant the verdict must catch); records the
 *       shipment with the customer's previous shipped sequence number, for the order verdict.
 * </ul>
 *
 * <p>{@code --crash-after-max N} (0: never) adds the lab's in-process crash: the process halts at once after a random
 * 1/2 N to N effects committed (consumers: before the offset commit; relay: broker acknowledgements, before "sent"),
 * the moment of the worst crash for each stage. It stops by itself once there is nothing left to apply.
 */
public final class TwoStageService {
    private static final RetryPolicy FAST_RETRY = RetryPolicy.builder()
            .initialDelay(Duration.ofMillis(100))
            .multiplier(1.0)
            .maxDelay(Duration.ofMillis(100))
            .maxAttempts(300)
            .jitter(0.0)
            .build();

    private TwoStageService() {}

    public static void main(String[] args) {
        Crash.onException(() -> run(SampleArgs.parse(args)));
    }

    private static void run(SampleArgs a) throws Exception {
        HikariConfig pool = new HikariConfig();
        pool.setJdbcUrl(a.get("jdbc"));
        pool.setMaximumPoolSize(3);
        pool.setMinimumIdle(1);
        HikariDataSource dataSource = new HikariDataSource(pool);
        int crashMax = Integer.parseInt(a.values().getOrDefault("crash-after-max", "0"));
        AtomicInteger untilCrash = new AtomicInteger(
                crashMax == 0 ? Integer.MAX_VALUE : ThreadLocalRandom.current().nextInt(crashMax / 2, crashMax + 1));
        Runnable afterEffect = () -> {
            if (untilCrash.decrementAndGet() == 0) {
                System.out.println("CRASH after an effect committed, before it is acknowledged");
                Runtime.getRuntime().halt(137);
            }
        };
        switch (a.get("role")) {
            case "payments" -> consume(a, a.get("orders"), dataSource, "two-stage-payments", payments(a), afterEffect);
            case "shipping" -> consume(a, a.get("events"), dataSource, "two-stage-shipping", shipping(), afterEffect);
            case "relay" -> relay(a, dataSource, afterEffect);
            default -> throw new IllegalArgumentException("--role must be payments, relay or shipping");
        }
        System.out.println("STARTED " + a.get("role"));
        new CountDownLatch(1).await();
    }

    /** One stage's effect in the given transaction; the value is {@code orderId:customer:seq}. */
    @FunctionalInterface
    private interface Stage {
        void apply(Connection c, String[] order, String eventId) throws SQLException;
    }

    /** Stage one: the payment and its event commit with the order's mark. */
    private static Stage payments(SampleArgs a) {
        Outbox outbox = Outbox.builder().build();
        String events = a.get("events");
        return (c, order, unused) -> {
            try (PreparedStatement ps =
                    c.prepareStatement("INSERT INTO two_stage_payments (order_id, customer, seq) VALUES (?, ?, ?)")) {
                ps.setString(1, order[0]);
                ps.setString(2, order[1]);
                ps.setInt(3, Integer.parseInt(order[2]));
                ps.executeUpdate();
            }
            outbox.send(c, OutboxMessage.to(events).key(order[1]).payload(String.join(":", order)));
        };
    }

    /** Stage two: the shipment, with the customer's last shipped sequence number at the time. */
    private static Stage shipping() {
        return (c, order, eventId) -> {
            int previous;
            try (PreparedStatement ps =
                    c.prepareStatement("SELECT MAX(seq) FROM two_stage_shipments WHERE customer = ?")) {
                ps.setString(1, order[1]);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    previous = rs.getInt(1);
                }
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO two_stage_shipments"
                    + " (order_id, customer, seq, previous_seq, event_id) VALUES (?, ?, ?, ?, ?)")) {
                ps.setString(1, order[0]);
                ps.setString(2, order[1]);
                ps.setInt(3, Integer.parseInt(order[2]));
                ps.setInt(4, previous);
                ps.setString(5, eventId);
                ps.executeUpdate();
            }
        };
    }

    private static void consume(
            SampleArgs a,
            String topic,
            HikariDataSource dataSource,
            String namespace,
            Stage stage,
            Runnable afterEffect) {
        boolean guarded = !a.values().getOrDefault("guard", "inbox").equals("none");
        JdbcInbox inbox = JdbcInbox.builder(dataSource).namespace(namespace).build();
        IdempotentKafkaConsumer.builder(Map.of(
                        "bootstrap.servers",
                        a.get("server"),
                        "group.id",
                        topic + "-" + namespace,
                        "auto.offset.reset",
                        "earliest",
                        "max.poll.records",
                        20,
                        "session.timeout.ms", // a killed process's partitions move on soon
                        3000,
                        "heartbeat.interval.ms",
                        300))
                .topics(topic)
                .workers(2)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .retryPolicy(FAST_RETRY)
                .handler((key, record) -> {
                    String[] order = record.value().split(":");
                    Outcome outcome = guarded
                            ? inbox.handle(Delivery.of(key), c -> {
                                stage.apply(c, order, key);
                                return Outcome.processed();
                            })
                            : unguarded(dataSource, c -> stage.apply(c, order, key));
                    if (outcome.type() == Outcome.Type.PROCESSED) {
                        afterEffect.run();
                    }
                    return outcome;
                })
                .build()
                .start();
    }

    /** The effect in a transaction of its own, for every delivery: no dedup. */
    private static Outcome unguarded(HikariDataSource dataSource, SqlWork work) {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            work.run(c);
            c.commit();
            return Outcome.processed();
        } catch (SQLException e) {
            throw new IllegalStateException("the shipment failed: " + e.getMessage(), e);
        }
    }

    @FunctionalInterface
    private interface SqlWork {
        void run(Connection c) throws SQLException;
    }

    private static void relay(SampleArgs a, HikariDataSource dataSource, Runnable afterAck) {
        OutboxPublisher kafka = KafkaOutboxPublisher.create(Map.of("bootstrap.servers", a.get("server")));
        OutboxPublisher publisher = record -> kafka.publish(record).thenRun(afterAck);
        OutboxRelay.builder(dataSource, publisher)
                .shards(4)
                .batchSize(5)
                .lease(Duration.ofSeconds(3))
                .publishTimeout(Duration.ofSeconds(1))
                .pollInterval(Duration.ofMillis(50))
                .build()
                .start();
    }
}
