package dev.idem.kafka;

import static dev.idem.kafka.KafkaFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Cause 5: "cancel" is published before "create" for the same order (here on another partition, as happens with two
 * producers or a keying change). The guarded cancel is a conditional update that answers {@code OUT_OF_ORDER} while
 * the order does not exist; the runner retries it until "create" has landed.
 */
class CancelBeforeCreateTest {
    static KafkaFixture.Bank bank;

    @BeforeAll
    static void setUp() {
        bank = new KafkaFixture.Bank("CancelBeforeCreateTest");
        bank.database().execute("CREATE TABLE orders (id VARCHAR(100) PRIMARY KEY, status VARCHAR(20) NOT NULL)");
        bank.database()
                .execute("CREATE TABLE order_event (id SERIAL PRIMARY KEY, order_id VARCHAR(100), action VARCHAR(20))");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    @Test
    void cancelBeforeCreate_unguardedCancelFindsNoOrder_andIsLost() throws Exception {
        String order = run(false, "unguarded");
        assertThat(status(order)).as("the cancel was acked without effect").isEqualTo("CREATED");
        assertThat(events(order, "CANCEL")).isZero();
    }

    @Test
    void cancelBeforeCreate_guardedCancelIsOutOfOrderUntilCreate_endsCancelled_oneEffectEach() throws Exception {
        String order = run(true, "guarded");
        assertThat(status(order)).isEqualTo("CANCELLED");
        assertThat(events(order, "CREATE")).isEqualTo(1);
        assertThat(events(order, "CANCEL")).isEqualTo(1);
    }

    private static String run(boolean guarded, String mode) throws Exception {
        String topic = KafkaFixture.topic("cancelfirst" + mode, 2);
        String group = topic + "-group";
        String order = topic + "-order";
        CountDownLatch cancelTried = new CountDownLatch(1);
        try (Guard guard = Guard.of(InMemoryStore.create(), group);
                var consumer = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(group))
                        .topics(topic)
                        .workers(2)
                        .retryPolicy(new RetryPolicy(Duration.ofMillis(100), 1.0, Duration.ofMillis(100), 300, 0.0))
                        .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                        .handler((key, record) -> {
                            Outcome outcome = guard.handle(key, null, ctx -> switch (record.value()) {
                                case "create" -> create(order);
                                case "cancel" -> guarded ? cancel(order) : cancelUnchecked(order);
                                default -> Outcome.rejected("unknown action " + record.value());
                            });
                            if (record.value().equals("cancel")) {
                                cancelTried.countDown();
                            }
                            return outcome;
                        })
                        .build()
                        .start();
                KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.send(producer, topic, 0, order + ":CANCEL", "cancel");
            assertThat(cancelTried.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            KafkaFixture.send(producer, topic, 1, order + ":CREATE", "create");
            KafkaFixture.awaitAllCommitted(group, topic);
        }
        return order;
    }

    private static Outcome create(String order) throws Exception {
        try (Connection c = bank.database().connection()) {
            c.setAutoCommit(false);
            try (PreparedStatement insert =
                    c.prepareStatement("INSERT INTO orders (id, status) VALUES (?, 'CREATED')")) {
                insert.setString(1, order);
                insert.executeUpdate();
            }
            event(c, order, "CREATE");
            c.commit();
            return Outcome.processed();
        }
    }

    /** The state-machine guard: CREATED → CANCELLED, or tell why not. */
    private static Outcome cancel(String order) throws Exception {
        try (Connection c = bank.database().connection()) {
            c.setAutoCommit(false);
            try (PreparedStatement update =
                    c.prepareStatement("UPDATE orders SET status = 'CANCELLED' WHERE id = ? AND status = 'CREATED'")) {
                update.setString(1, order);
                if (update.executeUpdate() == 1) {
                    event(c, order, "CANCEL");
                    c.commit();
                    return Outcome.processed();
                }
            }
            c.rollback();
            String status = statusOf(c, order);
            if (status == null) {
                return Outcome.outOfOrder("order not created yet");
            }
            return Outcome.duplicate("order already " + status);
        }
    }

    private static Outcome cancelUnchecked(String order) throws Exception {
        try (Connection c = bank.database().connection();
                PreparedStatement update = c.prepareStatement("UPDATE orders SET status = 'CANCELLED' WHERE id = ?")) {
            update.setString(1, order);
            update.executeUpdate();
            return Outcome.processed();
        }
    }

    private static void event(Connection c, String order, String action) throws Exception {
        try (PreparedStatement insert =
                c.prepareStatement("INSERT INTO order_event (order_id, action) VALUES (?, ?)")) {
            insert.setString(1, order);
            insert.setString(2, action);
            insert.executeUpdate();
        }
    }

    private static String statusOf(Connection c, String order) throws Exception {
        try (PreparedStatement s = c.prepareStatement("SELECT status FROM orders WHERE id = ?")) {
            s.setString(1, order);
            try (ResultSet rs = s.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    private static String status(String order) throws Exception {
        try (Connection c = bank.database().connection()) {
            return statusOf(c, order);
        }
    }

    private static long events(String order, String action) throws Exception {
        try (Connection c = bank.database().connection();
                PreparedStatement s =
                        c.prepareStatement("SELECT COUNT(*) FROM order_event WHERE order_id = ? AND action = ?")) {
            s.setString(1, order);
            s.setString(2, action);
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}
