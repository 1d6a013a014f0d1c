package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Delivery;
import dev.idem.Guard;
import dev.idem.Guard.StoreFailurePolicy;
import dev.idem.IdempotencyKey;
import dev.idem.Outcome;
import dev.idem.testkit.TcpProxy;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.net.SocketTimeoutException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Review of {@link JdbcStore#completeInTransaction}: what it does to the lease watchdog, to a commit lost on the
 * network, to a transaction whose snapshot is older than the claim, and to a fail-open guard.
 */
class CompleteInTransactionReviewTest {
    private static TestDatabase postgres;
    private static TestDatabase h2;

    @BeforeAll
    static void open() {
        postgres = TestDatabase.postgres("CompleteInTxReview");
        h2 = TestDatabase.h2("CompleteInTxReview");
        for (TestDatabase db : new TestDatabase[] {postgres, h2}) {
            db.execute("CREATE TABLE IF NOT EXISTS effects_in_tx (id VARCHAR(200) PRIMARY KEY)");
        }
    }

    @AfterAll
    static void close() {
        postgres.close();
        h2.close();
    }

    private static void applyEffect(Connection c, String id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO effects_in_tx (id) VALUES (?)")) {
            ps.setString(1, id);
            ps.executeUpdate();
        }
    }

    private static int effects(DataSource ds, String id) throws SQLException {
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM effects_in_tx WHERE id = ?")) {
            ps.setString(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /**
     * Review finding 1, as it was before the fix: the completion holds the claim's row lock until the handler's transaction ends. The lease watchdog
     * of the whole JVM is ONE thread, and JdbcStore.extend has no lock or query timeout: when the handler's COMMIT is
     * cut off by the network (the fate-unknown case OwnTransaction answers IN_PROGRESS for), the PostgreSQL backend
     * stays idle in transaction holding the row, the watchdog's extend of that key waits for it for ever, and no
     * other lease of the JVM is extended any more. Another handler's lease (another key, its handler still running an
     * effect outside the database) lapses under it, a redelivery takes it over, and its effect runs twice.
     */
    @Test
    @Timeout(120)
    void postgres_aCompletionWhoseCommitIsCutOff_doesNotStallTheSharedWatchdog_soNoOtherLeaseLapses() throws Exception {
        JdbcStore store = JdbcStore.builder(postgres.dataSource())
                .createTableIfMissing(true)
                .build();
        TestServers.Server server = TestServers.postgres();
        String url = postgres.url().replace(server.host() + ":" + server.port(), "127.0.0.1:%d");
        Duration lease = Duration.ofSeconds(3);
        AtomicInteger externalEffects = new AtomicInteger();
        CountDownLatch redeliveryDone = new CountDownLatch(1);
        CountDownLatch cut = new CountDownLatch(1);
        try (TcpProxy proxy = TcpProxy.start(server.host(), server.port());
                Guard guard = Guard.builder(store)
                        .namespace("review-watchdog")
                        .lease(lease)
                        .build();
                Guard otherConsumer = Guard.builder(store)
                        .namespace("review-watchdog")
                        .lease(lease)
                        .watchdog(false)
                        .build()) {
            OwnTransaction overTheNetwork = OwnTransaction.builder(new UrlDataSource(String.format(url, proxy.port())))
                    .dialect(Dialect.POSTGRESQL)
                    .build();
            // Handling 1 (key pay-1): effect and completion in one transaction; the network is cut during COMMIT.
            CompletableFuture<Outcome> first = CompletableFuture.supplyAsync(() -> guard.handle(
                    Delivery.of("pay-1"),
                    ctx -> overTheNetwork.run(c -> {
                        applyEffect(c, "pay-1");
                        Outcome o = store.completeInTransaction(c, ctx, Outcome.processed());
                        proxy.partitionExisting();
                        cut.countDown();
                        return o;
                    })));
            assertThat(cut.await(20, TimeUnit.SECONDS))
                    .as("handling 1's commit cut off")
                    .isTrue();

            // Handling 2 (key pay-2), same JVM: an HTTP call that takes two leases, under the watchdog.
            CompletableFuture<Outcome> second =
                    CompletableFuture.supplyAsync(() -> guard.handle(Delivery.of("pay-2"), ctx -> {
                        externalEffects.incrementAndGet();
                        redeliveryDone.await(4 * lease.toMillis(), TimeUnit.MILLISECONDS);
                        return Outcome.processed();
                    }));
            await().atMost(Duration.ofSeconds(10)).until(() -> externalEffects.get() == 1);
            Thread.sleep(lease.toMillis() + 1000); // the watchdog renews a lease every third of it: plenty of time

            // A redelivery of pay-2 at another consumer must find it in progress.
            Outcome redelivery = otherConsumer.handle(Delivery.of("pay-2"), ctx -> {
                externalEffects.incrementAndGet();
                return Outcome.processed();
            });
            redeliveryDone.countDown();
            second.get(30, TimeUnit.SECONDS);
            proxy.close(); // ends handling 1's connection: the server rolls its transaction back
            first.get(60, TimeUnit.SECONDS);

            assertThat(redelivery.type())
                    .as("pay-2's handler still runs under the watchdog: " + redelivery)
                    .isEqualTo(Outcome.Type.IN_PROGRESS);
            assertThat(externalEffects.get()).as("pay-2's external effect").isEqualTo(1);
        }
    }

    /**
     * Review finding 3, as it was before the fix: a handler's REPEATABLE READ (or SERIALIZABLE) transaction whose snapshot was taken before the claim
     * (it read something before calling the guard, e.g. a Spring @Transactional(isolation = REPEATABLE_READ) method
     * that loads the account first) cannot see the claim: the completion updates nothing, and the error blames the
     * connection's database or schema and tells the user to pass the store's own database, which they did. Every
     * redelivery fails the same way until the message is dead-lettered.
     */
    @Test
    @Timeout(60)
    void postgres_aRepeatableReadSnapshotOlderThanTheClaim_isNotBlamedOnAnotherDatabase() throws SQLException {
        JdbcStore store = JdbcStore.builder(postgres.dataSource())
                .createTableIfMissing(true)
                .build();
        try (Guard guard = Guard.builder(store)
                        .namespace("review-rr")
                        .watchdog(false)
                        .build();
                Connection c = postgres.connection()) {
            c.setAutoCommit(false);
            c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            effects(c, "balance"); // the transaction's first read takes its snapshot
            Outcome outcome = guard.handle(Delivery.of("pay-rr"), ctx -> {
                applyEffect(c, "pay-rr");
                return store.completeInTransaction(c, ctx, Outcome.processed());
            });
            c.rollback();

            assertThat(outcome.type()).isEqualTo(Outcome.Type.FAILED);
            assertThat(outcome.cause().orElseThrow().getMessage())
                    .doesNotContain("store's own database and schema")
                    .containsIgnoringCase("snapshot");
        }
    }

    private static void effects(Connection c, String id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM effects_in_tx WHERE id = ?")) {
            ps.setString(1, id);
            ps.executeQuery().close();
        }
    }

    /**
     * Review finding 4, as it was before the fix: a FAIL_OPEN guard runs the handler unguarded when the store is down (owner "unguarded"), but a
     * handler written as documented ({@code return store.completeInTransaction(c, ctx, ...)}) then finds no claim,
     * asks the unavailable store whether the connection is the wrong one, and throws: the effect rolls back, and
     * fail-open silently behaves as fail-closed for exactly the handlers this feature is for.
     */
    @Test
    @Timeout(60)
    void failOpen_aHandlerCompletingInItsTransaction_stillAppliesTheEffectUnguarded() throws SQLException {
        JdbcStore down = JdbcStore.builder(UrlDataSource.unreachable(Dialect.POSTGRESQL))
                .dialect(Dialect.POSTGRESQL)
                .build();
        OwnTransaction own = OwnTransaction.of(postgres.dataSource());
        try (Guard guard = Guard.builder(down)
                .namespace("review-fail-open")
                .onStoreUnavailable(StoreFailurePolicy.FAIL_OPEN)
                .build()) {
            Outcome outcome = guard.handle(
                    Delivery.of("pay-open"),
                    ctx -> own.run(c -> {
                        applyEffect(c, "pay-open");
                        return down.completeInTransaction(c, ctx, Outcome.processed());
                    }));

            assertThat(outcome.type()).as(outcome.toString()).isEqualTo(Outcome.Type.PROCESSED);
            assertThat(effects(postgres.dataSource(), "pay-open")).isEqualTo(1);
        }
    }

    /**
     * Review finding 2, as it was before the fix: the handler's COMMIT is lost on the network (a partition: the client's socket times out, the server
     * never hears of it and keeps the transaction open, holding the claim's row the completion locked). OwnTransaction
     * answers IN_PROGRESS (fate unknown), so the guard releases the claim: its DELETE waits for that row with no lock
     * or query timeout, and the consumer's thread hangs for as long as the server keeps the dead session (on
     * PostgreSQL's defaults, until TCP keepalive gives up: hours). Before completeInTransaction no PostgreSQL session
     * of the store ever held a claim's row across a round trip to the client.
     */
    @Test
    @Timeout(120)
    void postgres_aCommitLostOnTheNetwork_doesNotHangTheGuardsRelease() throws Exception {
        JdbcStore store = JdbcStore.builder(postgres.dataSource())
                .createTableIfMissing(true)
                .build();
        List<Connection> stranded = new CopyOnWriteArrayList<>();
        OwnTransaction commitLost = OwnTransaction.builder(commitLostOnTheNetwork(stranded))
                .dialect(Dialect.POSTGRESQL)
                .build();
        try (Guard guard = Guard.builder(store)
                .namespace("review-commit-lost")
                .watchdog(false)
                .build()) {
            CompletableFuture<Outcome> handling = CompletableFuture.supplyAsync(() -> guard.handle(
                    Delivery.of("pay-lost"),
                    ctx -> commitLost.run(c -> {
                        applyEffect(c, "pay-lost");
                        return store.completeInTransaction(c, ctx, Outcome.processed());
                    })));
            try {
                assertThat(handling)
                        .as(() -> "the guard's answer after a commit whose fate is unknown; statements waiting for a"
                                + " lock: " + statementsWaitingForALock())
                        .succeedsWithin(Duration.ofSeconds(20))
                        .satisfies(o -> assertThat(o.type()).isEqualTo(Outcome.Type.IN_PROGRESS));
            } finally {
                for (Connection c : stranded) {
                    c.close(); // the dead session ends: the server rolls it back
                }
                handling.get(30, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * Connections to the test database whose COMMIT is lost on the network: the driver's socket times out (08006) on the commit (or the switch back to auto-commit that commits),
     * the statement never reaches the server, whose session stays open in its transaction. Rollback fails the same
     * way and close does not reach the server either; the test closes them in {@code stranded} at its end.
     */
    private static DataSource commitLostOnTheNetwork(List<Connection> stranded) {
        return (DataSource) Proxy.newProxyInstance(
                DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class}, (self, method, args) -> {
                    if (!method.getName().equals("getConnection")) {
                        throw new UnsupportedOperationException(method.getName());
                    }
                    Connection real = DriverManager.getConnection(postgres.url());
                    stranded.add(real);
                    return Proxy.newProxyInstance(
                            Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, (p, m, a) -> {
                                switch (m.getName()) {
                                    case "commit", "rollback", "setAutoCommit" -> {
                                        if ((m.getName().equals("rollback") && a != null)
                                                || (m.getName().equals("setAutoCommit")
                                                        && (!(Boolean) a[0] || real.getAutoCommit()))) {
                                            break; // not the end of the transaction: the network is still fine
                                        }
                                        throw new SQLException(
                                                "An I/O error occurred while sending to the backend.",
                                                "08006",
                                                new SocketTimeoutException("Read timed out"));
                                    }
                                    case "close" -> {
                                        return null;
                                    }
                                    case "isClosed" -> {
                                        return false;
                                    }
                                    default -> {}
                                }
                                try {
                                    return m.invoke(real, a);
                                } catch (InvocationTargetException e) {
                                    throw e.getCause();
                                }
                            });
                });
    }

    private static String statementsWaitingForALock() {
        try (Connection c = postgres.connection();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT query FROM pg_stat_activity WHERE wait_event_type = 'Lock'")) {
            StringBuilder b = new StringBuilder();
            while (rs.next()) {
                b.append('[').append(rs.getString(1)).append(']');
            }
            return b.toString();
        } catch (SQLException e) {
            return e.toString();
        }
    }

    /**
     * The completion pauses the watchdog's renewals while its transaction holds the claim's row. A transaction that
     * rolls back after writing it (a deadlock) and runs again must be renewed again: with the renewals stopped for
     * good, a rerun longer than the lease lost its claim to a takeover (and any call it made elsewhere ran twice).
     */
    @Test
    @Timeout(60)
    void postgres_aTransactionRunAgainAfterItsCompletionRolledBack_isRenewedAgain() throws Exception {
        JdbcStore store = JdbcStore.builder(postgres.dataSource())
                .createTableIfMissing(true)
                .build();
        OwnTransaction own = OwnTransaction.of(postgres.dataSource());
        IdempotencyKey key = IdempotencyKey.of("review-rerun", "pay-rerun");
        AtomicInteger attempts = new AtomicInteger();
        AtomicBoolean renewedDuringTheRerun = new AtomicBoolean();
        try (Guard guard = Guard.builder(store)
                .namespace("review-rerun")
                .lease(Duration.ofMillis(600))
                .build()) {
            Outcome outcome = guard.handle(
                    Delivery.of("pay-rerun"),
                    ctx -> own.run(c -> {
                        if (attempts.incrementAndGet() == 1) {
                            store.completeInTransaction(c, ctx, Outcome.processed());
                            throw new SQLException("deadlock detected", "40P01"); // rolled back, then run again
                        }
                        Instant before = store.lookup(key).orElseThrow().expiresAt();
                        long giveUp = System.nanoTime() + Duration.ofSeconds(10).toNanos();
                        while (!renewedDuringTheRerun.get() && System.nanoTime() < giveUp) {
                            Thread.sleep(20);
                            renewedDuringTheRerun.set(
                                    store.lookup(key).orElseThrow().expiresAt().isAfter(before));
                        }
                        return store.completeInTransaction(c, ctx, Outcome.processed());
                    }));

            assertThat(outcome.type()).as(outcome.toString()).isEqualTo(Outcome.Type.PROCESSED);
            assertThat(attempts).hasValue(2);
            assertThat(renewedDuringTheRerun)
                    .as("the lease renewed while the rerun ran")
                    .isTrue();
        }
    }
}
