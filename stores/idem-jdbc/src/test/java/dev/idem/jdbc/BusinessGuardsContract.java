package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.ConfigurationException;
import dev.idem.Outcome;
import dev.idem.StateMachine;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/** The business guards on one real database; one subclass per engine. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class BusinessGuardsContract {
    static final StateMachine ORDERS = StateMachine.builder()
            .states("PENDING", "PAID", "SHIPPED", "CANCELLED")
            .initial("PENDING")
            .transition("PAY", "PENDING", "PAID")
            .transition("SHIP", "PAID", "SHIPPED")
            .transition("CANCEL", "PENDING", "CANCELLED")
            .build();
    static final long PRICE = 25;

    private TestDatabase db;
    private final StateMachineGuard orders =
            StateMachineGuard.builder(ORDERS).table("orders").build();
    private final UniqueRowGuard orderRows =
            UniqueRowGuard.builder().table("orders").uniqueKey("id").build();
    private final VersionGuard accounts =
            VersionGuard.builder().table("accounts").build();
    private final PreconditionGuard balances =
            PreconditionGuard.builder().table("accounts").column("balance").build();
    private final UniqueRowGuard transferLedger = UniqueRowGuard.builder()
            .table("transfer_ledger")
            .uniqueKey("transfer_id", "account_id")
            .build();

    abstract TestDatabase openDatabase();

    @BeforeAll
    void createSchema() {
        db = openDatabase();
    }

    @AfterAll
    void dropSchema() {
        db.close();
    }

    @BeforeEach
    void freshTables() {
        for (String table : List.of("orders", "accounts", "ledger", "transfer_ledger")) {
            db.execute("DROP TABLE IF EXISTS " + table);
        }
        db.execute("CREATE TABLE orders (id VARCHAR(64) PRIMARY KEY, status VARCHAR(32) NOT NULL,"
                + " paid_at TIMESTAMP NULL)");
        db.execute("CREATE TABLE accounts (id VARCHAR(64) PRIMARY KEY, balance BIGINT NOT NULL,"
                + " version BIGINT NOT NULL)");
        db.execute("CREATE TABLE ledger (order_id VARCHAR(64) NOT NULL, kind VARCHAR(16) NOT NULL,"
                + " amount BIGINT NOT NULL)");
        db.execute("CREATE TABLE transfer_ledger (transfer_id VARCHAR(64) NOT NULL, account_id VARCHAR(64) NOT NULL,"
                + " amount BIGINT NOT NULL, UNIQUE (transfer_id, account_id))");
        db.execute("INSERT INTO accounts (id, balance, version) VALUES ('customer', 1000000, 0)");
    }

    private Outcome deliver(String orderId, String event) {
        if (event.equals("CREATE")) {
            return orderRows.insertOnce(
                    db.dataSource(), Map.of("id", orderId, "status", ORDERS.initial()), SideEffect.NONE);
        }
        SideEffect charge = event.equals("PAY") ? c -> charge(c, orderId) : SideEffect.NONE;
        return orders.apply(db.dataSource(), orderId, event, Assignments.of(), charge);
    }

    private static void charge(Connection c, String orderId) throws SQLException {
        try (PreparedStatement debit = c.prepareStatement("UPDATE accounts SET balance = balance - ? WHERE id = ?");
                PreparedStatement ledger =
                        c.prepareStatement("INSERT INTO ledger (order_id, kind, amount) VALUES (?, 'CHARGE', ?)")) {
            debit.setLong(1, PRICE);
            debit.setString(2, "customer");
            debit.executeUpdate();
            ledger.setString(1, orderId);
            ledger.setLong(2, PRICE);
            ledger.executeUpdate();
        }
    }

    /**
     * Every order's lifecycle is delivered with each event 1–3 times, in random order, from 4 threads; each
     * OUT_OF_ORDER delivery is retried until it applies. Every order ends in the state its last event implies and
     * every paid order is charged exactly once.
     */
    @Test
    @Timeout(180)
    void orderLifecycle_deliveredRepeatedly_inRandomOrder_fromSeveralThreads_endsRight_chargedOnce() throws Exception {
        List<List<String>> histories =
                List.of(List.of(), List.of("PAY"), List.of("PAY", "SHIP"), List.of("CANCEL"), List.of("PAY", "SHIP"));
        Random random = new Random(11);
        int orderCount = 150;
        Map<String, List<String>> historyOf = new HashMap<>();
        List<String[]> deliveries = new ArrayList<>();
        for (int i = 0; i < orderCount; i++) {
            String id = "order-" + i;
            List<String> history = histories.get(random.nextInt(histories.size()));
            historyOf.put(id, history);
            List<String> events = new ArrayList<>(history);
            events.add("CREATE");
            for (String event : events) {
                for (int copies = 1 + random.nextInt(3); copies > 0; copies--) {
                    deliveries.add(new String[] {id, event});
                }
            }
        }
        Collections.shuffle(deliveries, random);
        ConcurrentLinkedQueue<String[]> queue = new ConcurrentLinkedQueue<>(deliveries);
        AtomicInteger rejected = new AtomicInteger();
        AtomicInteger retried = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> workers = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                workers.add(pool.submit(() -> {
                    for (String[] d = queue.poll(); d != null; d = queue.poll()) {
                        Outcome outcome = deliver(d[0], d[1]);
                        switch (outcome.action()) {
                            case ACK -> {}
                            case RETRY -> {
                                retried.incrementAndGet();
                                queue.add(d);
                            }
                            case DEAD_LETTER -> rejected.incrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> w : workers) {
                w.get(170, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }

        assertThat(rejected).hasValue(0);
        assertThat(retried.get())
                .as("some deliveries overtook their predecessors")
                .isPositive();
        Map<String, String> status = query("SELECT id, status FROM orders");
        Map<String, String> charges = query("SELECT order_id, COUNT(*) FROM ledger GROUP BY order_id");
        long paid = 0;
        for (var e : historyOf.entrySet()) {
            List<String> h = e.getValue();
            String expected = h.isEmpty() ? "PENDING" : ORDERS.targetOf(h.get(h.size() - 1));
            assertThat(status.get(e.getKey())).as(e.getKey()).isEqualTo(expected);
            boolean isPaid = h.contains("PAY");
            paid += isPaid ? 1 : 0;
            assertThat(charges.get(e.getKey())).as("charges of %s", e.getKey()).isEqualTo(isPaid ? "1" : null);
        }
        assertThat(query("SELECT id, balance FROM accounts"))
                .containsEntry("customer", String.valueOf(1000000 - paid * PRICE));
    }

    @Test
    void cancelBeforeCreate_isRetriedUntilTheOrderExists_thenApplies() {
        assertThat(deliver("o-1", "CANCEL").type()).isEqualTo(Outcome.Type.OUT_OF_ORDER);
        assertThat(deliver("o-1", "CREATE").type()).isEqualTo(Outcome.Type.PROCESSED);

        assertThat(deliver("o-1", "CANCEL").type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(deliver("o-1", "CANCEL").type()).isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(query("SELECT id, status FROM orders")).containsEntry("o-1", "CANCELLED");
    }

    @Test
    void shipBeforePay_isOutOfOrder_andPayOnACancelledOrder_isRejectedWithoutCharging() {
        deliver("o-1", "CREATE");
        assertThat(deliver("o-1", "SHIP").type()).isEqualTo(Outcome.Type.OUT_OF_ORDER);
        deliver("o-1", "CANCEL");

        Outcome pay = deliver("o-1", "PAY");

        assertThat(pay.type()).isEqualTo(Outcome.Type.REJECTED);
        assertThat(pay.reason()).contains("PAY", "CANCELLED");
        assertThat(query("SELECT order_id, COUNT(*) FROM ledger GROUP BY order_id"))
                .isEmpty();
    }

    @Test
    void transition_withExtraColumns_setsThemOnlyWhenItApplies() throws SQLException {
        deliver("o-1", "CREATE");
        var paidAt = java.sql.Timestamp.valueOf("2026-01-15 14:30:00");

        try (Connection c = db.connection()) {
            assertThat(orders.apply(c, "o-1", "PAY", Assignments.of().set("paid_at", paidAt), SideEffect.NONE)
                            .type())
                    .isEqualTo(Outcome.Type.PROCESSED);
            assertThat(orders.apply(
                                    c,
                                    "o-1",
                                    "PAY",
                                    Assignments.of().set("paid_at", java.sql.Timestamp.valueOf("2030-01-01 00:00:00")),
                                    SideEffect.NONE)
                            .type())
                    .isEqualTo(Outcome.Type.DUPLICATE);
        }
        assertThat(query("SELECT id, paid_at FROM orders").get("o-1")).startsWith("2026-01-15 14:30");
    }

    @Test
    @Timeout(60)
    void versionGuard_concurrentDuplicatesOfOneMessage_applyExactlyOnce() throws Exception {
        int threads = 8;
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<Outcome>> results = new ArrayList<>();
        try {
            for (int t = 0; t < threads; t++) {
                results.add(pool.submit(() -> {
                    start.await();
                    return accounts.apply(
                            db.dataSource(), "customer", 0, Assignments.of().add("balance", -100), SideEffect.NONE);
                }));
            }
            start.countDown();
            List<Outcome.Type> types = new ArrayList<>();
            for (Future<Outcome> f : results) {
                types.add(f.get(50, TimeUnit.SECONDS).type());
            }
            assertThat(types).containsOnlyOnce(Outcome.Type.PROCESSED);
            assertThat(types).filteredOn(t -> t != Outcome.Type.PROCESSED).containsOnly(Outcome.Type.DUPLICATE);
        } finally {
            pool.shutdownNow();
        }
        assertThat(query("SELECT id, balance FROM accounts")).containsEntry("customer", "999900");
    }

    @Test
    void versionGuard_reorderedVersions_applyInOrder_afterRetries() {
        List<Integer> versions = new ArrayList<>();
        for (int v = 0; v < 10; v++) {
            versions.add(v);
            versions.add(v);
        }
        Collections.shuffle(versions, new Random(3));
        java.util.ArrayDeque<Integer> queue = new java.util.ArrayDeque<>(versions);
        AtomicLong applied = new AtomicLong();
        int outOfOrder = 0;
        while (!queue.isEmpty()) {
            int v = queue.poll();
            Outcome o = accounts.apply(
                    db.dataSource(), "customer", v, Assignments.of().add("balance", -(v + 1)), SideEffect.NONE);
            switch (o.type()) {
                case PROCESSED -> applied.incrementAndGet();
                case OUT_OF_ORDER -> {
                    outOfOrder++;
                    queue.add(v);
                }
                case DUPLICATE -> {}
                default -> throw new AssertionError(o);
            }
        }
        assertThat(applied).hasValue(10);
        assertThat(outOfOrder).isPositive();
        assertThat(query("SELECT id, version FROM accounts")).containsEntry("customer", "10");
        assertThat(query("SELECT id, balance FROM accounts")).containsEntry("customer", String.valueOf(1000000 - 55));
    }

    @Test
    void versionGuard_onAMissingRow_isOutOfOrder() {
        assertThat(accounts.apply(db.dataSource(), "nobody", 0, Assignments.of(), SideEffect.NONE)
                        .type())
                .isEqualTo(Outcome.Type.OUT_OF_ORDER);
    }

    @Test
    void precondition_appliesOnce_duplicateIsRecognised_conflictIsRejected() {
        db.execute("UPDATE accounts SET balance = 500 WHERE id = 'customer'");

        assertThat(balances.apply(db.dataSource(), "customer", 500, 600, SideEffect.NONE)
                        .type())
                .isEqualTo(Outcome.Type.PROCESSED);
        assertThat(balances.apply(db.dataSource(), "customer", 500, 600, SideEffect.NONE)
                        .type())
                .isEqualTo(Outcome.Type.DUPLICATE);
        Outcome conflict = balances.apply(db.dataSource(), "customer", 500, 700, SideEffect.NONE);
        assertThat(conflict.type()).isEqualTo(Outcome.Type.REJECTED);
        assertThat(conflict.reason()).contains("expected 500", "found 600");
        assertThat(balances.apply(db.dataSource(), "nobody", 500, 600, SideEffect.NONE)
                        .type())
                .isEqualTo(Outcome.Type.OUT_OF_ORDER);
    }

    @Test
    void uniqueRow_duplicateInsideTheCallersTransaction_leavesItUsable() throws SQLException {
        Map<String, Object> row = Map.of("transfer_id", "t-1", "account_id", "a", "amount", -100);
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            assertThat(transferLedger.insertOnce(c, row, SideEffect.NONE).type())
                    .isEqualTo(Outcome.Type.PROCESSED);

            assertThat(transferLedger.insertOnce(c, row, SideEffect.NONE).type())
                    .isEqualTo(Outcome.Type.DUPLICATE);
            try (PreparedStatement ps = c.prepareStatement(
                    "INSERT INTO transfer_ledger (transfer_id, account_id, amount) VALUES ('t-1', 'b', 100)")) {
                ps.executeUpdate();
            }
            c.commit();
        }
        assertThat(query("SELECT account_id, amount FROM transfer_ledger")).containsOnlyKeys("a", "b");
    }

    @Test
    void stateMachineInsideTheInbox_oneTransaction_outOfOrderLeavesNoMark_businessDuplicateIsAcked() {
        JdbcInbox inbox = JdbcInbox.builder(db.dataSource())
                .namespace("orders")
                .createTableIfMissing(true)
                .build();
        deliver("o-1", "CREATE");
        TransactionalHandler ship = c -> orders.apply(c, "o-1", "SHIP", Assignments.of(), SideEffect.NONE);
        TransactionalHandler pay = c -> orders.apply(c, "o-1", "PAY", Assignments.of(), c2 -> charge(c2, "o-1"));

        assertThat(inbox.handle("msg-ship", null, ship).type()).isEqualTo(Outcome.Type.OUT_OF_ORDER);
        assertThat(inbox.handle("msg-pay", null, pay).type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(inbox.handle("msg-ship", null, ship).type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(inbox.handle("msg-ship", null, ship).type()).isEqualTo(Outcome.Type.DUPLICATE);
        Outcome resentWithNewId = inbox.handle("msg-pay-resent", null, pay);

        assertThat(resentWithNewId.type()).isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(resentWithNewId.reason()).contains("SHIPPED");
        assertThat(query("SELECT order_id, COUNT(*) FROM ledger GROUP BY order_id"))
                .containsEntry("o-1", "1");
        assertThat(query("SELECT id, status FROM orders")).containsEntry("o-1", "SHIPPED");
    }

    @Test
    void badTableOrColumnName_isAConfigurationError_notSql() {
        assertThatThrownBy(() -> StateMachineGuard.builder(ORDERS).table("orders; DROP TABLE accounts"))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("not a valid SQL identifier");
        assertThatThrownBy(() -> Assignments.of().set("paid_at = now(), status", 1))
                .isInstanceOf(ConfigurationException.class);
    }

    private Map<String, String> query(String sql) {
        Map<String, String> rows = new HashMap<>();
        try (Connection c = db.connection();
                ResultSet rs = c.createStatement().executeQuery(sql)) {
            while (rs.next()) {
                rows.put(rs.getString(1), rs.getString(2));
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        return rows;
    }
}
