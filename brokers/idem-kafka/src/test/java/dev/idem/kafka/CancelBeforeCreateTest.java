package dev.idem.kafka;

import static dev.idem.kafka.KafkaFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

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
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Cause 5: an event overtakes the one it depends on, "cancel" before "create" and "ship" before "pay" of one order
 * (here on another partition, as happens with two producers or a keying change). The orders table is the only guard:
 * CREATE is an insert-once ({@link UniqueRowGuard}), every other event a conditional update ({@link
 * StateMachineGuard}) that answers {@code OUT_OF_ORDER} until the order is in a state the event applies to; the
 * runner retries it until the earlier event has landed.
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
        Run run = run(false, "cancelunguarded", List.of(), "CANCEL", List.of("CREATE"));
        assertThat(status(run.order)).as("the cancel was acked without effect").isEqualTo("PENDING");
        assertThat(events(run.order)).containsExactly("CREATE");
    }

    @Test
    void cancelBeforeCreate_cancelIsOutOfOrderUntilCreate_endsCancelled_oneEffectEach() throws Exception {
        Run run = run(true, "cancelguarded", List.of(), "CANCEL", List.of("CREATE"));
        assertThat(status(run.order)).isEqualTo("CANCELLED");
        assertThat(events(run.order)).containsExactly("CREATE", "CANCEL");
        assertThat(run.earlyOutcomes).startsWith(Outcome.Type.OUT_OF_ORDER).endsWith(Outcome.Type.PROCESSED);
    }

    @Test
    void shipBeforePay_unguardedShipsTheUnpaidOrder_andPayMovesItBack() throws Exception {
        Run run = run(false, "shipunguarded", List.of("CREATE"), "SHIP", List.of("PAY"));
        assertThat(status(run.order)).as("the shipment was overwritten").isEqualTo("PAID");
        assertThat(events(run.order)).containsExactly("CREATE", "SHIP", "PAY");
    }

    @Test
    void shipBeforePay_shipIsOutOfOrderUntilPaid_endsShipped_oneEffectEach() throws Exception {
        Run run = run(true, "shipguarded", List.of("CREATE"), "SHIP", List.of("PAY"));
        assertThat(status(run.order)).isEqualTo("SHIPPED");
        assertThat(events(run.order)).containsExactly("CREATE", "PAY", "SHIP");
        assertThat(run.earlyOutcomes).startsWith(Outcome.Type.OUT_OF_ORDER).endsWith(Outcome.Type.PROCESSED);
    }

    private record Run(String order, List<Outcome.Type> earlyOutcomes) {}

    /**
     * Sends {@code setup} (partition 1) and waits until it is handled, then {@code early} (partition 0) and waits
     * until it was tried once, then {@code late} (partition 1); returns when every record is committed.
     */
    private static Run run(boolean guarded, String mode, List<String> setup, String early, List<String> late)
            throws Exception {
        String topic = KafkaFixture.topic(mode, 2);
        String group = topic + "-group";
        String order = topic + "-order";
        List<Outcome.Type> earlyOutcomes = new CopyOnWriteArrayList<>();
        CountDownLatch earlyTried = new CountDownLatch(1);
        try (var consumer = KafkaFixture.consumer(group, topic)
                        .workers(2)
                        .handler((key, record) -> {
                            String event = record.value();
                            Outcome outcome = guarded ? guarded(order, event) : unguarded(order, event);
                            if (event.equals(early)) {
                                earlyOutcomes.add(outcome.type());
                                earlyTried.countDown();
                            }
                            return outcome;
                        })
                        .build()
                        .start();
                KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (String event : setup) {
                KafkaFixture.send(producer, topic, 1, order + ":" + event, event);
            }
            KafkaFixture.awaitAllCommitted(group, topic);
            KafkaFixture.send(producer, topic, 0, order + ":" + early, early);
            assertThat(earlyTried.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            for (String event : late) {
                KafkaFixture.send(producer, topic, 1, order + ":" + event, event);
            }
            KafkaFixture.awaitAllCommitted(group, topic);
        }
        return new Run(order, earlyOutcomes);
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
