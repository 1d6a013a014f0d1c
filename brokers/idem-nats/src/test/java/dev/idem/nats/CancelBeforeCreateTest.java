package dev.idem.nats;

import static dev.idem.nats.NatsFixture.FAST_RETRY;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Outcome;
import dev.idem.StateMachine;
import dev.idem.jdbc.Assignments;
import dev.idem.jdbc.OwnTransaction;
import dev.idem.jdbc.StateMachineGuard;
import dev.idem.jdbc.TransactionalHandler;
import dev.idem.jdbc.UniqueRowGuard;
import dev.idem.testsupport.PaymentBank;
import io.nats.client.Connection;
import java.nio.charset.StandardCharsets;
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
 * Cause 5: an event overtakes the one it depends on; the test publishes "cancel" before "create" (and "ship" before
 * "pay") of one order. The orders table on PostgreSQL is the guard: CREATE inserts once ({@link UniqueRowGuard}),
 * every other event is a conditional update ({@link StateMachineGuard}) answering OUT_OF_ORDER until the order is in
 * a state the event applies to, and the consumer naks it with a delay until the earlier event has landed.
 */
class CancelBeforeCreateTest {
    static final StateMachine LIFECYCLE = StateMachine.builder()
            .states("PENDING", "PAID", "SHIPPED", "CANCELLED")
            .initial("PENDING")
            .transition("PAY", "PENDING", "PAID")
            .transition("SHIP", "PAID", "SHIPPED")
            .transition("CANCEL", "PENDING", "CANCELLED")
            .build();
    static final StateMachineGuard ORDERS =
            StateMachineGuard.builder(LIFECYCLE).table("orders").build();
    static final UniqueRowGuard NEW_ORDERS =
            UniqueRowGuard.builder().table("orders").uniqueKey("id").build();

    static PaymentBank bank;
    static Connection nats;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("NatsCancelBeforeCreateTest");
        bank.database().execute("CREATE TABLE orders (id VARCHAR(100) PRIMARY KEY, status VARCHAR(20) NOT NULL)");
        bank.database()
                .execute("CREATE TABLE order_event (id SERIAL PRIMARY KEY, order_id VARCHAR(100), action VARCHAR(20))");
        nats = NatsFixture.connect();
    }

    @AfterAll
    static void tearDown() throws InterruptedException {
        nats.close();
        bank.close();
    }

    @Test
    void cancelBeforeCreate_unguardedCancelFindsNoOrder_andIsLost() throws Exception {
        Run run = run(false, "cancelunguarded", List.of("CANCEL", "CREATE"));
        assertThat(status(run.order)).as("the cancel was acked without effect").isEqualTo("PENDING");
        assertThat(events(run.order)).containsExactly("CREATE");
    }

    @Test
    void cancelBeforeCreate_cancelIsOutOfOrderUntilCreate_endsCancelled_oneEffectEach() throws Exception {
        Run run = run(true, "cancelguarded", List.of("CANCEL", "CREATE"));
        assertThat(status(run.order)).isEqualTo("CANCELLED");
        assertThat(events(run.order)).containsExactly("CREATE", "CANCEL");
        assertThat(run.outcomes.get("CANCEL"))
                .startsWith(Outcome.Type.OUT_OF_ORDER)
                .endsWith(Outcome.Type.PROCESSED);
    }

    @Test
    void shipBeforePay_unguardedShipsTheUnpaidOrder_andPayMovesItBack() throws Exception {
        Run run = run(false, "shipunguarded", List.of("CREATE", "SHIP", "PAY"));
        assertThat(status(run.order)).as("the shipment was overwritten").isEqualTo("PAID");
        assertThat(events(run.order)).containsExactly("CREATE", "SHIP", "PAY");
    }

    @Test
    void shipBeforePay_shipIsOutOfOrderUntilPaid_endsShipped_oneEffectEach() throws Exception {
        Run run = run(true, "shipguarded", List.of("CREATE", "SHIP", "PAY"));
        assertThat(status(run.order)).isEqualTo("SHIPPED");
        assertThat(events(run.order)).containsExactly("CREATE", "PAY", "SHIP");
        assertThat(run.outcomes.get("SHIP"))
                .startsWith(Outcome.Type.OUT_OF_ORDER)
                .endsWith(Outcome.Type.PROCESSED);
    }

    private record Run(String order, Map<String, List<Outcome.Type>> outcomes) {}

    /** Publishes {@code events} of one order in this order and consumes them all with one worker. */
    private static Run run(boolean guarded, String mode, List<String> events) throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, mode)) {
            String order = streams.prefix + "-order";
            Map<String, List<Outcome.Type>> outcomes = Map.of(
                    "CREATE", new CopyOnWriteArrayList<>(),
                    "PAY", new CopyOnWriteArrayList<>(),
                    "SHIP", new CopyOnWriteArrayList<>(),
                    "CANCEL", new CopyOnWriteArrayList<>());
            for (String event : events) {
                nats.jetStream()
                        .publish(NatsProducers.message(
                                streams.subject("orders"),
                                order + ":" + event,
                                event.getBytes(StandardCharsets.UTF_8)));
            }
            String durable = streams.durable("orders", java.time.Duration.ofSeconds(2), -1);
            try (IdempotentNatsConsumer consumer = IdempotentNatsConsumer.builder(nats)
                    .consumer(streams.name, durable)
                    .deadLetterSubject(streams.deadLetterSubject)
                    .handler((key, message) -> {
                        String event = new String(message.getData(), StandardCharsets.UTF_8);
                        Outcome outcome = guarded ? guarded(order, event) : unguarded(order, event);
                        outcomes.get(event).add(outcome.type());
                        return outcome;
                    })
                    .retryPolicy(FAST_RETRY)
                    .build()
                    .start()) {
                streams.awaitDone(durable);
            }
            assertThat(streams.deadLetters()).isEmpty();
            return new Run(order, outcomes);
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

    /** The events applied to {@code order}, in the order they were applied. */
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
