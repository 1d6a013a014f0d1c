package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.ConfigurationException;
import dev.idem.Delivery;
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

    protected TestDatabase db;
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
                + " amount BIGINT NOT NULL, ref VARCHAR(64) NULL, UNIQUE (transfer_id, account_id),"
                + " CONSTRAINT transfer_ref_uk UNIQUE (ref))");
        db.execute("INSERT INTO accounts (id, balance, version) VALUES ('customer', 1000000, 0)");
    }

    private Outcome deliver(String orderId, String event) {
        if (event.equals("CREATE")) {
            return own().run(c -> orderRows.insertOnce(
                    c, Map.of("id", orderId, "status", ORDERS.initial()), TransactionalHandler.NONE));
        }
        TransactionalHandler charge = event.equals("PAY") ? c -> charge(c, orderId) : TransactionalHandler.NONE;
        return own().run(c -> orders.apply(c, orderId, event, Assignments.of(), charge));
    }

    private OwnTransaction own() {
        return OwnTransaction.of(db.dataSource());
    }

    private static Outcome charge(Connection c, String orderId) throws SQLException {
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
        return Outcome.processed();
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
    void transition_withExtraColumns_setsThemOnlyWhenItApplies() throws Exception {
        deliver("o-1", "CREATE");
        var paidAt = java.sql.Timestamp.valueOf("2026-01-15 14:30:00");

        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            assertThat(orders.apply(c, "o-1", "PAY", Assignments.of().set("paid_at", paidAt), TransactionalHandler.NONE)
                            .type())
                    .isEqualTo(Outcome.Type.PROCESSED);
            assertThat(orders.apply(
                                    c,
                                    "o-1",
                                    "PAY",
                                    Assignments.of().set("paid_at", java.sql.Timestamp.valueOf("2030-01-01 00:00:00")),
                                    TransactionalHandler.NONE)
                            .type())
                    .isEqualTo(Outcome.Type.DUPLICATE);
            c.commit();
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
                    return own().run(c -> accounts.apply(
                            c, "customer", 0, Assignments.of().add("balance", -100), TransactionalHandler.NONE));
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
            Outcome o = own().run(c -> accounts.apply(
                    c, "customer", v, Assignments.of().add("balance", -(v + 1)), TransactionalHandler.NONE));
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
        assertThat(own().run(c -> accounts.apply(c, "nobody", 0, Assignments.of(), TransactionalHandler.NONE))
                        .type())
                .isEqualTo(Outcome.Type.OUT_OF_ORDER);
    }

    @Test
    void precondition_appliesOnce_duplicateIsRecognised_conflictIsRejected() {
        db.execute("UPDATE accounts SET balance = 500 WHERE id = 'customer'");

        assertThat(own().run(c -> balances.apply(
                                c,
                                "customer",
                                PreconditionGuard.Change.from(500).to(600),
                                TransactionalHandler.NONE))
                        .type())
                .isEqualTo(Outcome.Type.PROCESSED);
        assertThat(own().run(c -> balances.apply(
                                c,
                                "customer",
                                PreconditionGuard.Change.from(500).to(600),
                                TransactionalHandler.NONE))
                        .type())
                .isEqualTo(Outcome.Type.DUPLICATE);
        Outcome conflict = own().run(c ->
                balances.apply(c, "customer", PreconditionGuard.Change.from(500).to(700), TransactionalHandler.NONE));
        assertThat(conflict.type()).isEqualTo(Outcome.Type.REJECTED);
        assertThat(conflict.reason()).contains("expected 500", "found 600");
        assertThat(own().run(c -> balances.apply(
                                c, "nobody", PreconditionGuard.Change.from(500).to(600), TransactionalHandler.NONE))
                        .type())
                .isEqualTo(Outcome.Type.OUT_OF_ORDER);
    }

    @Test
    void uniqueRow_duplicateInsideTheCallersTransaction_leavesItUsable() throws Exception {
        Map<String, Object> row = Map.of("transfer_id", "t-1", "account_id", "a", "amount", -100);
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            assertThat(transferLedger
                            .insertOnce(c, row, TransactionalHandler.NONE)
                            .type())
                    .isEqualTo(Outcome.Type.PROCESSED);

            assertThat(transferLedger
                            .insertOnce(c, row, TransactionalHandler.NONE)
                            .type())
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
        TransactionalHandler ship = c -> orders.apply(c, "o-1", "SHIP", Assignments.of(), TransactionalHandler.NONE);
        TransactionalHandler pay = c -> orders.apply(c, "o-1", "PAY", Assignments.of(), c2 -> charge(c2, "o-1"));

        assertThat(inbox.handle(Delivery.of("msg-ship"), ship).type()).isEqualTo(Outcome.Type.OUT_OF_ORDER);
        assertThat(inbox.handle(Delivery.of("msg-pay"), pay).type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(inbox.handle(Delivery.of("msg-ship"), ship).type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(inbox.handle(Delivery.of("msg-ship"), ship).type()).isEqualTo(Outcome.Type.DUPLICATE);
        Outcome resentWithNewId = inbox.handle(Delivery.of("msg-pay-resent"), pay);

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

    // ---------------------------------------------------------------- faults

    private Dialect dialect() {
        return switch (db.engine()) {
            case POSTGRESQL -> Dialect.POSTGRESQL;
            case MARIADB -> Dialect.MARIADB;
            case H2 -> Dialect.H2;
        };
    }

    /**
     * Regression (PostgreSQL): a side effect that caught the failure of one of its statements left an aborted
     * transaction; its own-transaction commit was a silent rollback and the outcome said PROCESSED.
     */
    @Test
    void ownTransaction_sideEffectSwallowingItsFailedStatement_isNeverProcessedForALostTransition() {
        deliver("o-1", "CREATE");

        Outcome outcome = own().run(c -> orders.apply(c, "o-1", "PAY", Assignments.of(), c2 -> {
            charge(c2, "o-1");
            try (PreparedStatement bad = c.prepareStatement("INSERT INTO no_such_table VALUES (1)")) {
                bad.executeUpdate();
            } catch (SQLException ignored) {
                // the side effect's choice
            }
            return Outcome.processed();
        }));

        String status = query("SELECT id, status FROM orders").get("o-1");
        if (outcome.type() == Outcome.Type.PROCESSED) {
            assertThat(status).isEqualTo("PAID");
        } else {
            assertThat(status).isEqualTo("PENDING");
            assertThat(deliver("o-1", "PAY").type()).isEqualTo(Outcome.Type.PROCESSED);
        }
        assertThat(query("SELECT order_id, COUNT(*) FROM ledger GROUP BY order_id"))
                .containsEntry("o-1", "1");
    }

    /** Regression: an unreachable database was FAILED (a handler failure, counted towards dead-lettering). */
    @Test
    void ownTransaction_onAnUnreachableDatabase_isInProgress() {
        Outcome outcome =
                OwnTransaction.of(UrlDataSource.unreachable(dialect())).run(c -> orders.apply(c, "o-1", "PAY"));

        assertThat(outcome.type()).as("%s", outcome).isEqualTo(Outcome.Type.IN_PROGRESS);
    }

    /**
     * Regression: on an auto-commit connection the transition committed alone; the charge then failed, and the
     * redelivery answered DUPLICATE: the charge never happened.
     */
    @Test
    void guardsOnAnAutoCommitConnection_areRefused() throws SQLException {
        deliver("o-1", "CREATE");
        try (Connection c = db.connection()) {
            c.setAutoCommit(true);
            assertThatThrownBy(() -> orders.apply(c, "o-1", "PAY"))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("autoCommit");
            assertThatThrownBy(() -> accounts.apply(c, "customer", 0, Assignments.of(), TransactionalHandler.NONE))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> balances.apply(
                            c,
                            "customer",
                            PreconditionGuard.Change.from(1000000).to(1),
                            TransactionalHandler.NONE))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> transferLedger.insertOnce(
                            c, Map.of("transfer_id", "t", "account_id", "a", "amount", 1), TransactionalHandler.NONE))
                    .isInstanceOf(IllegalArgumentException.class);
        }
        assertThat(query("SELECT id, status FROM orders")).containsEntry("o-1", "PENDING");
        assertThat(query("SELECT id, version FROM accounts")).containsEntry("customer", "0");
    }

    /** Each row's columns are checked and its statement built once per column list: a bad row stays refused. */
    @Test
    void uniqueRow_aBadRow_isRefusedEveryTime_andRowsOfOtherColumnsStillInsert() throws Exception {
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            for (int i = 0; i < 2; i++) {
                assertThatThrownBy(() -> transferLedger.insertOnce(
                                c, Map.of("transfer_id", "t-1", "amount", -100), TransactionalHandler.NONE))
                        .isInstanceOf(ConfigurationException.class)
                        .hasMessageContaining("every unique-key column");
                assertThatThrownBy(() -> transferLedger.insertOnce(
                                c,
                                Map.of("transfer_id", "t-1", "account_id", "a", "amount; DROP TABLE x", 1),
                                TransactionalHandler.NONE))
                        .isInstanceOf(ConfigurationException.class)
                        .hasMessageContaining("not a valid SQL identifier");
            }
            c.rollback();
        }
        Map<String, Object> narrow = Map.of("transfer_id", "t-1", "account_id", "a", "amount", -100);
        Map<String, Object> wide = Map.of("transfer_id", "t-2", "account_id", "a", "amount", -100, "ref", "R2");
        assertThat(insertTransfer(narrow).type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(insertTransfer(wide).type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(insertTransfer(narrow).type()).isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(insertTransfer(wide).type()).isEqualTo(Outcome.Type.DUPLICATE);
    }

    /** Inserts a transfer ledger row once, in a transaction of its own. */
    private Outcome insertTransfer(Map<String, Object> row) {
        return own().run(c -> transferLedger.insertOnce(c, row, TransactionalHandler.NONE));
    }

    /** Regression: a new row that violated another unique constraint was taken for a duplicate and never applied. */
    @Test
    void uniqueRow_violatingAnotherUniqueConstraint_isRejectedNamingIt_notDuplicate() throws Exception {
        Outcome first = insertTransfer(Map.of("transfer_id", "t-1", "account_id", "a", "amount", -100, "ref", "R1"));
        Outcome other = insertTransfer(Map.of("transfer_id", "t-2", "account_id", "a", "amount", -100, "ref", "R1"));
        Outcome copy;
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            copy = transferLedger.insertOnce(
                    c,
                    Map.of("transfer_id", "t-1", "account_id", "a", "amount", -100, "ref", "R1"),
                    TransactionalHandler.NONE);
            c.rollback();
        }

        assertThat(first.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(other.type()).as("%s", other).isEqualTo(Outcome.Type.REJECTED);
        assertThat(other.reason()).containsIgnoringCase("transfer_ref_uk");
        assertThat(copy.type()).isEqualTo(Outcome.Type.DUPLICATE);
    }

    /**
     * Without a fingerprint column a different change written against the same version is DUPLICATE (a lost
     * update); with one, the event that made the version is told apart: REJECTED.
     */
    @Test
    void versionGuard_withAFingerprintColumn_rejectsADifferentEventAtTheSameVersion() {
        db.execute("ALTER TABLE accounts ADD last_event VARCHAR(128) NULL");
        VersionGuard plain = VersionGuard.builder().table("accounts").build();
        VersionGuard fingerprinted = VersionGuard.builder()
                .table("accounts")
                .fingerprintColumn("last_event")
                .build();
        Assignments debit = Assignments.of().add("balance", -100);

        Outcome first =
                own().run(c -> fingerprinted.apply(c, "customer", 0, "evt-a", debit, TransactionalHandler.NONE));
        Outcome sameAgain =
                own().run(c -> fingerprinted.apply(c, "customer", 0, "evt-a", debit, TransactionalHandler.NONE));
        Outcome other =
                own().run(c -> fingerprinted.apply(c, "customer", 0, "evt-b", debit, TransactionalHandler.NONE));
        Outcome otherUnfingerprinted = own().run(c -> plain.apply(c, "customer", 0, debit, TransactionalHandler.NONE));

        assertThat(first.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(sameAgain.type()).isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(other.type()).as("%s", other).isEqualTo(Outcome.Type.REJECTED);
        assertThat(otherUnfingerprinted.type()).as("the documented blind spot").isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(query("SELECT id, balance FROM accounts")).containsEntry("customer", String.valueOf(1000000 - 100));
    }

    @Test
    void stateMachine_withAFingerprintColumn_rejectsADifferentEventToTheSameState() {
        db.execute("ALTER TABLE orders ADD last_event VARCHAR(128) NULL");
        StateMachineGuard fingerprinted = StateMachineGuard.builder(ORDERS)
                .table("orders")
                .fingerprintColumn("last_event")
                .build();
        deliver("o-1", "CREATE");

        Outcome pay = own().run(
                        c -> fingerprinted.apply(c, "o-1", "PAY", "pay-1", Assignments.of(), c2 -> charge(c2, "o-1")));
        Outcome payAgain = own().run(
                        c -> fingerprinted.apply(c, "o-1", "PAY", "pay-1", Assignments.of(), c2 -> charge(c2, "o-1")));
        Outcome otherPay = own().run(
                        c -> fingerprinted.apply(c, "o-1", "PAY", "pay-2", Assignments.of(), c2 -> charge(c2, "o-1")));

        assertThat(pay.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(payAgain.type()).isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(otherPay.type()).as("%s", otherPay).isEqualTo(Outcome.Type.REJECTED);
        assertThat(query("SELECT order_id, COUNT(*) FROM ledger GROUP BY order_id"))
                .containsEntry("o-1", "1");
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
