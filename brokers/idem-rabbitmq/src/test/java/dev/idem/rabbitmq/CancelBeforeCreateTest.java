package dev.idem.rabbitmq;

import static dev.idem.rabbitmq.RabbitFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Connection;
import dev.idem.Outcome;
import dev.idem.StateMachine;
import dev.idem.jdbc.Assignments;
import dev.idem.jdbc.OwnTransaction;
import dev.idem.jdbc.StateMachineGuard;
import dev.idem.jdbc.TransactionalHandler;
import dev.idem.jdbc.UniqueRowGuard;
import dev.idem.testsupport.PaymentBank;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Cause 5: "cancel" is published before "create" of the same order. The orders table on PostgreSQL is the only guard:
 * CREATE is an insert-once ({@link UniqueRowGuard}), CANCEL a conditional update ({@link StateMachineGuard}) that
 * answers {@code OUT_OF_ORDER} while the order does not exist; the consumer sends it through the retry queue until
 * CREATE has landed.
 */
class CancelBeforeCreateTest {
    static final StateMachine LIFECYCLE = StateMachine.builder()
            .states("PENDING", "CANCELLED")
            .initial("PENDING")
            .transition("CANCEL", "PENDING", "CANCELLED")
            .build();
    static final StateMachineGuard ORDERS =
            StateMachineGuard.builder(LIFECYCLE).table("orders").build();
    static final UniqueRowGuard NEW_ORDERS =
            UniqueRowGuard.builder().table("orders").uniqueKey("id").build();

    static PaymentBank bank;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("RabbitCancelBeforeCreateTest");
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
        Run run = run(false, "unguarded");
        assertThat(status(run.order)).as("the cancel was acked without effect").isEqualTo("PENDING");
        assertThat(events(run.order)).containsExactly("CREATE");
    }

    @Test
    void cancelBeforeCreate_cancelIsOutOfOrderUntilCreate_endsCancelled_oneEffectEach() throws Exception {
        Run run = run(true, "guarded");
        assertThat(status(run.order)).isEqualTo("CANCELLED");
        assertThat(events(run.order)).containsExactly("CREATE", "CANCEL");
        assertThat(run.cancelOutcomes).startsWith(Outcome.Type.OUT_OF_ORDER).endsWith(Outcome.Type.PROCESSED);
    }

    private record Run(String order, List<Outcome.Type> cancelOutcomes) {}

    /** Publishes CANCEL then CREATE of one order; returns when both were acked and nothing waits for a retry. */
    private static Run run(boolean guarded, String mode) throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("cancel" + mode);
                Connection connection = RabbitFixture.connect()) {
            String order = queues.queue() + "-order";
            List<Outcome.Type> cancelOutcomes = new CopyOnWriteArrayList<>();
            List<String> acked = new CopyOnWriteArrayList<>();
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(RabbitFixture.FAST_RETRY)
                    .handler((key, message) -> {
                        String event = RabbitFixture.text(message.getBody());
                        Outcome outcome = guarded ? guarded(order, event) : unguarded(order, event);
                        if (event.equals("CANCEL")) {
                            cancelOutcomes.add(outcome.type());
                        }
                        if (outcome.isFinal()) {
                            acked.add(event);
                        }
                        return outcome;
                    })
                    .build()
                    .start()) {
                queues.publish(order + ":CANCEL", "CANCEL");
                queues.publish(order + ":CREATE", "CREATE");
                await().atMost(WAIT)
                        .until(() -> acked.size() == 2
                                && queues.depth(queues.queue()) == 0
                                && queues.depth(queues.topology.retryQueue()) == 0);
            }
            return new Run(order, cancelOutcomes);
        }
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
        try (java.sql.Connection c = bank.database().connection()) {
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

    private static void event(java.sql.Connection c, String order, String action) throws SQLException {
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

    private static List<String> events(String order) throws SQLException {
        return strings("SELECT action FROM order_event WHERE order_id = ? ORDER BY id", order);
    }

    private static List<String> strings(String sql, String arg) throws SQLException {
        try (java.sql.Connection c = bank.database().connection();
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
