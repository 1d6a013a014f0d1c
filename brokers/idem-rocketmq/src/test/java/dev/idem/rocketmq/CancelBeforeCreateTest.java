package dev.idem.rocketmq;

import static dev.idem.rocketmq.RocketMQFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import dev.idem.StateMachine;
import dev.idem.jdbc.Assignments;
import dev.idem.jdbc.OwnTransaction;
import dev.idem.jdbc.StateMachineGuard;
import dev.idem.jdbc.TransactionalHandler;
import dev.idem.jdbc.UniqueRowGuard;
import dev.idem.testsupport.PaymentBank;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Cause 5: the concurrent push consumer reorders one queue ("cancel" handled before the "create" stored ahead of
 * it; here the create's handler waits until the cancel was tried, the order RocketMQ's consume threads can take).
 * The orders table guards itself: CREATE is an insert-once ({@link UniqueRowGuard}), CANCEL a conditional update
 * ({@link StateMachineGuard}) that answers {@code OUT_OF_ORDER} until the order exists; the listener retries it.
 */
class CancelBeforeCreateTest {
    static final StateMachine LIFECYCLE = StateMachine.builder()
            .states("PENDING", "PAID", "CANCELLED")
            .initial("PENDING")
            .transition("PAY", "PENDING", "PAID")
            .transition("CANCEL", "PENDING", "CANCELLED")
            .build();
    static final StateMachineGuard ORDERS =
            StateMachineGuard.builder(LIFECYCLE).table("orders").build();
    static final UniqueRowGuard NEW_ORDERS =
            UniqueRowGuard.builder().table("orders").uniqueKey("id").build();

    static PaymentBank bank;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("CancelBeforeCreateTest");
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
        Run run = run(false, "cancelplain");
        assertThat(status(run.order))
                .as("the cancel was acknowledged without effect")
                .isEqualTo("PENDING");
        assertThat(events(run.order)).containsExactly("CREATE");
    }

    @Test
    void cancelBeforeCreate_cancelIsOutOfOrderUntilCreate_endsCancelled_oneEffectEach() throws Exception {
        Run run = run(true, "cancelguard");
        assertThat(status(run.order)).isEqualTo("CANCELLED");
        assertThat(events(run.order)).containsExactly("CREATE", "CANCEL");
        assertThat(run.cancelOutcomes).startsWith(Outcome.Type.OUT_OF_ORDER).endsWith(Outcome.Type.PROCESSED);
    }

    private record Run(String order, List<Outcome.Type> cancelOutcomes) {}

    /** Sends CANCEL then CREATE to one queue; CREATE is handled only once CANCEL was tried. */
    private static Run run(boolean guarded, String name) throws Exception {
        String topic = RocketMQFixture.topic(name, 1);
        String group = topic + "-g";
        String order = topic + "-order";
        List<Outcome.Type> cancelOutcomes = new CopyOnWriteArrayList<>();
        CountDownLatch cancelTried = new CountDownLatch(1);
        DefaultMQPushConsumer consumer = RocketMQFixture.consumer(group, topic, group);
        consumer.registerMessageListener(RocketMQFixture.idem(consumer)
                .keyFrom(KeyExtractor.keys())
                .handler((key, message) -> {
                    String event = RocketMQFixture.body(message);
                    if (event.equals("CREATE") && !cancelTried.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                        throw new AssertionError("the cancel was never tried");
                    }
                    Outcome outcome = guarded ? guarded(order, event) : unguarded(order, event);
                    if (event.equals("CANCEL")) {
                        cancelOutcomes.add(outcome.type());
                        cancelTried.countDown();
                    }
                    return outcome;
                })
                .build()
                .concurrently());
        DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
        try {
            RocketMQFixture.send(producer, topic, order + ":CANCEL", "CANCEL");
            RocketMQFixture.send(producer, topic, order + ":CREATE", "CREATE");
            RocketMQFixture.start(consumer);
            await().atMost(WAIT)
                    .until(() -> cancelOutcomes.contains(Outcome.Type.PROCESSED)
                            || (!guarded && !events(order).isEmpty()));
            RocketMQFixture.awaitAllConsumed(consumer, topic, 1);
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
        return new Run(order, cancelOutcomes);
    }

    /** The order row guards itself; the event row is written in the same transaction, only if the event applied. */
    private static Outcome guarded(String order, String event) {
        DataSource dataSource = bank.database().dataSource();
        TransactionalHandler logEvent = c -> {
            event(c, order, event);
            return Outcome.processed();
        };
        return OwnTransaction.of(dataSource)
                .run(c -> event.equals("CREATE")
                        ? NEW_ORDERS.insertOnce(c, Map.of("id", order, "status", LIFECYCLE.initial()), logEvent)
                        : ORDERS.apply(c, order, event, Assignments.of(), logEvent));
    }

    /** Without a guard: insert the order, or set the event's target state whatever the current one is. */
    private static Outcome unguarded(String order, String event) throws SQLException {
        try (Connection c = bank.database().connection()) {
            boolean create = event.equals("CREATE");
            try (PreparedStatement write = c.prepareStatement(
                    create
                            ? "INSERT INTO orders (status, id) VALUES (?, ?)"
                            : "UPDATE orders SET status = ? WHERE id = ?")) {
                write.setString(1, create ? LIFECYCLE.initial() : LIFECYCLE.targetOf(event));
                write.setString(2, order);
                if (write.executeUpdate() == 1) {
                    event(c, order, event);
                }
            }
            return Outcome.processed();
        }
    }

    private static void event(Connection c, String order, String action) throws SQLException {
        try (PreparedStatement insert =
                c.prepareStatement("INSERT INTO order_event (order_id, action) VALUES (?, ?)")) {
            insert.setString(1, order);
            insert.setString(2, action);
            insert.executeUpdate();
        }
    }

    private static String status(String order) throws SQLException {
        return strings("SELECT status FROM orders WHERE id = ?", order).get(0);
    }

    /** The events applied to {@code order}, in the order they were applied. */
    private static List<String> events(String order) throws SQLException {
        return strings("SELECT action FROM order_event WHERE order_id = ? ORDER BY id", order);
    }

    private static List<String> strings(String sql, String arg) throws SQLException {
        try (Connection c = bank.database().connection();
                PreparedStatement s = c.prepareStatement(sql)) {
            s.setString(1, arg);
            try (ResultSet rs = s.executeQuery()) {
                List<String> values = new ArrayList<>();
                while (rs.next()) {
                    values.add(rs.getString(1));
                }
                return values;
            }
        }
    }
}
