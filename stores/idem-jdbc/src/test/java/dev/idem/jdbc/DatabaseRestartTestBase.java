package dev.idem.jdbc;

import static dev.idem.jdbc.InboxTestBase.pay;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Delivery;
import dev.idem.Guard;
import dev.idem.IdempotencyKey;
import dev.idem.Outcome;
import dev.idem.spi.StoredRecord;
import dev.idem.testkit.MutableClock;
import dev.idem.testsupport.PrivateServer;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * A database restart (fast shutdown, as the service manager does it) or crash (SIGKILL) under the two JDBC modes, on
 * a server of the test's own: the shared servers are never restarted. The business is the non-idempotent debit plus
 * ledger row of {@link InboxTestBase}; every redelivery goes through the same {@link TestDatabase} pool, which must
 * recover on its own.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(120)
abstract class DatabaseRestartTestBase {
    private static final long INITIAL_BALANCE = 1_000;
    private static final Duration LEASE = Duration.ofSeconds(30);

    private PrivateServer server;
    private TestDatabase db;
    private final MutableClock clock = MutableClock.atNow();
    private String namespace;

    /** Starts the private server of this database. */
    protected abstract PrivateServer startServer();

    /** Opens a test database on {@code server}. */
    protected abstract TestDatabase open(PrivateServer server);

    @BeforeAll
    void startServerAndCreateTables() {
        server = startServer();
        db = open(server);
        JdbcStore.builder(db.dataSource()).createTableIfMissing(true).build();
        db.execute("CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL)");
        db.execute(
                "CREATE TABLE ledger (payment_id VARCHAR(64) NOT NULL, account_id INT NOT NULL, amount BIGINT NOT NULL)");
    }

    @AfterAll
    void stopServer() {
        if (db != null) {
            db.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @BeforeEach
    void resetBusiness() {
        namespace = "n" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
        db.execute("DELETE FROM ledger");
        db.execute("DELETE FROM accounts");
        db.execute("INSERT INTO accounts VALUES (1, " + INITIAL_BALANCE + ")");
    }

    // ---------------------------------------------------------------- transactional mode

    @Test
    void restart_whileTheHandlerHoldsItsUncommittedWrites_isNeverProcessed_andTheRedeliveryAppliesOnce()
            throws Exception {
        JdbcInbox inbox = inbox();
        CountDownLatch wrote = new CountDownLatch(1);
        CountDownLatch restarted = new CountDownLatch(1);
        CompletableFuture<Outcome> first = CompletableFuture.supplyAsync(() -> inbox.handle(Delivery.of("p1"), c -> {
            pay("p1", 1, 10).handle(c);
            wrote.countDown();
            restarted.await();
            return Outcome.processed();
        }));
        wrote.await();

        server.restart();
        restarted.countDown();
        Outcome interrupted = first.get(60, TimeUnit.SECONDS);
        List<Outcome> redeliveries = redeliverUntilFinal(inbox);

        assertThat(interrupted.type()).as("%s", interrupted).isIn(Outcome.Type.FAILED, Outcome.Type.IN_PROGRESS);
        assertThat(redeliveries.get(redeliveries.size() - 1).type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(balance()).isEqualTo(INITIAL_BALANCE - 10);
        assertThat(ledgerRows("p1")).isEqualTo(1);
    }

    @Test
    void restart_rightAfterCommit_makesTheRedeliveryADuplicate() throws Exception {
        JdbcInbox inbox = inbox();
        assertThat(inbox.handle(Delivery.of("p1"), pay("p1", 1, 10)).type()).isEqualTo(Outcome.Type.PROCESSED);

        server.restart();
        List<Outcome> redeliveries = redeliverUntilFinal(inbox);

        assertThat(redeliveries.get(redeliveries.size() - 1).type()).isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(balance()).isEqualTo(INITIAL_BALANCE - 10);
        assertThat(ledgerRows("p1")).isEqualTo(1);
    }

    @Test
    void crash_rightAfterCommit_makesTheRedeliveryADuplicate() throws Exception {
        JdbcInbox inbox = inbox();
        assertThat(inbox.handle(Delivery.of("p1"), pay("p1", 1, 10)).type()).isEqualTo(Outcome.Type.PROCESSED);

        server.kill();
        server.start();
        List<Outcome> redeliveries = redeliverUntilFinal(inbox);

        assertThat(redeliveries.get(redeliveries.size() - 1).type()).isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(balance()).isEqualTo(INITIAL_BALANCE - 10);
        assertThat(ledgerRows("p1")).isEqualTo(1);
    }

    // ---------------------------------------------------------------- lease mode

    @Test
    void restart_whileAHandlerHoldsALeaseClaim_keepsTheClaim_redeliveryIsInProgressUntilTheLeaseEnds_thenTakesOver()
            throws Exception {
        JdbcStore store = JdbcStore.builder(db.dataSource()).clock(clock).build();
        Guard guard = Guard.builder(store)
                .namespace(namespace)
                .lease(LEASE)
                .watchdog(false)
                .build();
        AtomicInteger effects = new AtomicInteger();
        CountDownLatch claimed = new CountDownLatch(1);
        CountDownLatch letFirstEnd = new CountDownLatch(1);
        CompletableFuture<Outcome> first = CompletableFuture.supplyAsync(() -> guard.run("p1", () -> {
            claimed.countDown();
            letFirstEnd.await();
            throw new IllegalStateException("its payment call broke off in the restart");
        }));
        claimed.await();
        StoredRecord before = store.lookup(IdempotencyKey.of(namespace, "p1")).orElseThrow();

        server.restart();
        AtomicReference<Outcome> busy = new AtomicReference<>();
        await("the pool reconnects and the redelivery finds the claim")
                .atMost(Duration.ofSeconds(30))
                .pollInterval(Duration.ofMillis(100))
                .until(() -> {
                    busy.set(guard.run("p1", effects::incrementAndGet));
                    return busy.get().reason().startsWith("in progress by another consumer");
                });
        StoredRecord after = store.lookup(IdempotencyKey.of(namespace, "p1")).orElseThrow();
        clock.advance(LEASE.minusSeconds(1));
        Outcome stillBusy = guard.run("p1", effects::incrementAndGet);
        clock.advance(Duration.ofSeconds(2));
        Outcome takenOver = guard.run("p1", effects::incrementAndGet);
        letFirstEnd.countDown();
        Outcome firstEnded = first.get(30, TimeUnit.SECONDS);
        Outcome copy = guard.run("p1", effects::incrementAndGet);

        assertThat(after).as("the claim was committed before the restart").isEqualTo(before);
        assertThat(after.state()).isEqualTo(StoredRecord.State.PROCESSING);
        assertThat(busy.get().type()).isEqualTo(Outcome.Type.IN_PROGRESS);
        assertThat(stillBusy.type()).isEqualTo(Outcome.Type.IN_PROGRESS);
        assertThat(takenOver.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(firstEnded.type()).isEqualTo(Outcome.Type.FAILED);
        assertThat(copy.type()).isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(effects).hasValue(1);
        assertThat(store.lookup(IdempotencyKey.of(namespace, "p1"))
                        .orElseThrow()
                        .fencingToken())
                .isGreaterThan(before.fencingToken());
    }

    // ---------------------------------------------------------------- helpers

    private JdbcInbox inbox() {
        return JdbcInbox.builder(db.dataSource())
                .namespace(namespace)
                .clock(clock)
                .lockWait(Duration.ofSeconds(5))
                .build();
    }

    /** Redelivers payment p1 until an outcome is final, as a broker would (bounded); returns every outcome. */
    private static List<Outcome> redeliverUntilFinal(JdbcInbox inbox) {
        List<Outcome> outcomes = new ArrayList<>();
        await("a final outcome for the redelivery")
                .atMost(Duration.ofSeconds(30))
                .pollInterval(Duration.ofMillis(100))
                .until(() -> {
                    Outcome outcome = inbox.handle(Delivery.of("p1"), pay("p1", 1, 10));
                    outcomes.add(outcome);
                    return outcome.isFinal();
                });
        return outcomes;
    }

    private long balance() throws SQLException {
        return queryLong("SELECT balance FROM accounts WHERE id = 1");
    }

    private long ledgerRows(String paymentId) throws SQLException {
        return queryLong("SELECT COUNT(*) FROM ledger WHERE payment_id = '" + paymentId + "'");
    }

    private long queryLong(String query) throws SQLException {
        try (Connection c = db.connection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(query)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
