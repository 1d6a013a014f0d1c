package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.Guard;
import dev.idem.HandlingContext;
import dev.idem.IdempotencyKey;
import dev.idem.Outcome;
import dev.idem.RetryLaterException;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.StoredRecord;
import dev.idem.spi.UpdateResult;
import dev.idem.testkit.IdempotencyStoreContract;
import dev.idem.testkit.TcpProxy;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The store contract on one database; a subclass names the dialect and the clock. Adds the races that only a
 * database can stage: a claim that waits for the row while another transaction (a batch claim) holds it.
 */
abstract class JdbcStoreContract extends IdempotencyStoreContract {
    abstract Dialect dialect();

    /** Whether the store runs with {@code useDatabaseClock(true)}. Default false. */
    boolean databaseClock() {
        return false;
    }

    @Override
    protected boolean keepsItsOwnTime() {
        return databaseClock();
    }

    /**
     * Fewer random sequences than the contract's 1000 on a database server, where each try is dozens of round trips
     * (40 s on MariaDB with manual commits); every run draws new ones. H2 runs all 1000.
     */
    @Override
    @Property(tries = 250)
    protected void randomDeliverySequences_keepEveryEffectExactlyOnce(@ForAll("deliverySequences") List<Step> steps) {
        super.randomDeliverySequences_keepEveryEffectExactlyOnce(steps);
    }

    @Override
    protected IdempotencyStore createStore(Clock clock) {
        return storeOn(database(), clock);
    }

    @Override
    protected IdempotencyStore createUnavailableStore(Clock clock) {
        return JdbcStore.builder(UrlDataSource.unreachable(dialect()))
                .dialect(dialect())
                .build();
    }

    /** Whether the store's pool hands out connections in auto-commit. Default true. */
    boolean autoCommitPool() {
        return true;
    }

    private DataSource database() {
        return autoCommitPool()
                ? PerClassDatabase.of(getClass(), dialect()).dataSource()
                : PerClassDatabase.manualCommitPool(getClass(), dialect());
    }

    private JdbcStore storeOn(DataSource dataSource, Clock clock) {
        return JdbcStore.builder(dataSource)
                .createTableIfMissing(true)
                .clock(clock)
                .useDatabaseClock(databaseClock())
                .build();
    }

    /** The isolation level a pool hands its connections out with. */
    enum Isolation {
        SERVER_DEFAULT,
        REPEATABLE_READ
    }

    @ParameterizedTest
    @EnumSource(Isolation.class)
    @Timeout(60)
    void claim_waitingForAFreshKeyAnotherTransactionInserts_isInProgress(Isolation isolation) throws Exception {
        assumeTrue(
                dialect() != Dialect.H2,
                "H2 fails a claim that waits for another transaction's insert of the key (90131) at its lock timeout");
        IdempotencyKey k = key("k");
        try (HikariDataSource pool = pool(isolation);
                OwnedTransaction other = OwnedTransaction.begin(database(), dialect(), true)) {
            JdbcStore store = storeOn(pool, clock);
            Sql sql = new Sql(dialect(), Schema.DEFAULT_TABLE);
            long leaseUntil = clock.millis() + LEASE.toMillis();
            sql.insertClaims(other.connection(), List.of(new Sql.NewClaim(k.storageId(), "owner-b", leaseUntil, null)));

            CompletableFuture<ClaimResult> claim = claimWhileBlockedBy(other, store, k, "owner-c");
            assertThat(other.commit().fate()).isEqualTo(OwnedTransaction.Fate.COMMITTED);

            assertThat(claim.get(30, TimeUnit.SECONDS))
                    .isInstanceOfSatisfying(
                            ClaimResult.InProgress.class,
                            p -> assertThat(p.owner()).isEqualTo("owner-b"));
        }
    }

    /**
     * A batch claim takes a completed key whose retention ended over, and commits only after its own lease ran out
     * (a slow batch), while a single claim of the key waits for the row: that claim takes the batch's lease over,
     * says so (the batch's handler may have run part of the effect), and fences the batch off with a greater token.
     */
    @ParameterizedTest
    @EnumSource(Isolation.class)
    @Timeout(60)
    void claim_waitingForATakeoverThatCommitsLate_takesItOver_withAGreaterToken(Isolation isolation) throws Exception {
        assumeFalse(keepsItsOwnTime(), "the batch's lease is written on the test's clock, which must lead the store's");
        IdempotencyKey k = key("k");
        store.claim(ClaimRequest.of(k, "owner-a", LEASE));
        assertThat(store.complete(k, "owner-a", null, RETENTION)).isEqualTo(UpdateResult.APPLIED);
        advance(RETENTION.plusMillis(1));
        try (HikariDataSource pool = pool(isolation);
                OwnedTransaction batch = OwnedTransaction.begin(database(), dialect(), true)) {
            JdbcStore store = storeOn(pool, clock);
            Sql sql = new Sql(dialect(), Schema.DEFAULT_TABLE);
            Connection c = batch.connection();
            assertThat(sql.select(c, k.storageId(), Sql.Lock.EXCLUSIVE)).isNotNull();
            long batchLeaseUntil = clock.millis() + LEASE.toMillis();
            advance(LEASE.plusMillis(1));

            CompletableFuture<ClaimResult> claim = claimWhileBlockedBy(batch, store, k, "owner-c");
            long batchToken = sql.nextToken(c);
            sql.reclaim(c, List.of(new Sql.Reclaim(k.storageId(), "owner-b", batchToken, batchLeaseUntil, null)));
            assertThat(batch.commit().fate()).isEqualTo(OwnedTransaction.Fate.COMMITTED);

            assertThat(claim.get(30, TimeUnit.SECONDS)).isInstanceOfSatisfying(ClaimResult.TakenOver.class, t -> {
                assertThat(t.previousOwner()).isEqualTo("owner-b");
                assertThat(t.fencingToken()).isGreaterThan(batchToken);
            });
        }
    }

    /**
     * The claim's statement runs and commits but its answer is lost (the caller sees the store unavailable): a
     * redelivery's claim by a new owner finds the key in progress, and the first owner's retry gets its claim back.
     */
    @Test
    @Timeout(60)
    void claim_whoseAnswerIsLost_isInProgressForTheRedelivery_andClaimedAgainByItsOwner() throws SQLException {
        assumeTrue(dialect() != Dialect.H2, "H2 runs in memory here: no connection to lose");
        assumeTrue(
                dialect() != Dialect.MARIADB || !databaseClock(),
                "a claim on MariaDB's clock reads the clock first: the answer lost would be the clock's");
        IdempotencyKey k = key("k");
        TestServers.Server server = dialect() == Dialect.POSTGRESQL ? TestServers.postgres() : TestServers.mysql();
        String url = PerClassDatabase.of(getClass(), dialect())
                .url()
                .replace(server.host() + ":" + server.port(), "127.0.0.1:%d");
        try (TcpProxy proxy = TcpProxy.start(server.host(), server.port());
                Connection connection = DriverManager.getConnection(String.format(url, proxy.port())
                        + (dialect() == Dialect.POSTGRESQL ? "&socketTimeout=2" : "&socketTimeout=2000"))) {
            JdbcStore lossy = storeOn(onlyConnection(connection), clock);
            assertThat(lossy.lookup(k)).isEmpty(); // the connection is open and proven
            proxy.blackholeExisting();

            assertThatThrownBy(() -> lossy.claim(ClaimRequest.of(k, "owner-a", LEASE)))
                    .isInstanceOf(StoreUnavailableException.class);
        }

        assertThat(store.claim(ClaimRequest.of(k, "owner-b", LEASE)))
                .isInstanceOfSatisfying(
                        ClaimResult.InProgress.class, p -> assertThat(p.owner()).isEqualTo("owner-a"));
        long token = store.lookup(k).orElseThrow().fencingToken();
        assertThat(store.claim(ClaimRequest.of(k, "owner-a", LEASE)))
                .isInstanceOfSatisfying(
                        ClaimResult.Claimed.class,
                        c -> assertThat(c.fencingToken()).isEqualTo(token));
    }

    /** A data source that hands out {@code connection} every time, and never closes it (a pool would replace it). */
    private static DataSource onlyConnection(Connection connection) {
        Connection kept = (Connection) Proxy.newProxyInstance(
                Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, (self, method, args) -> {
                    if (method.getName().equals("close")) {
                        return null;
                    }
                    try {
                        return method.invoke(connection, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        return (DataSource) Proxy.newProxyInstance(
                DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class}, (self, method, args) -> {
                    if (method.getName().equals("getConnection")) {
                        return kept;
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
    }

    private HikariDataSource pool(Isolation isolation) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(PerClassDatabase.of(getClass(), dialect()).url());
        config.setMaximumPoolSize(2);
        if (isolation == Isolation.REPEATABLE_READ) {
            config.setTransactionIsolation("TRANSACTION_REPEATABLE_READ");
        }
        return new HikariDataSource(config);
    }

    /** Starts {@code owner}'s claim of {@code key} and returns once it waits for a lock {@code holder} holds. */
    private CompletableFuture<ClaimResult> claimWhileBlockedBy(
            OwnedTransaction holder, JdbcStore store, IdempotencyKey key, String owner) throws SQLException {
        String session = session(holder.connection());
        CompletableFuture<ClaimResult> claim =
                CompletableFuture.supplyAsync(() -> store.claim(ClaimRequest.of(key, owner, LEASE)));
        await().atMost(Duration.ofSeconds(30)).until(() -> claim.isDone() || waitersOn(session) > 0);
        assertThat(claim).as("the claim waits for the row").isNotDone();
        return claim;
    }

    private String session(Connection c) throws SQLException {
        String query = switch (dialect()) {
            case POSTGRESQL -> "SELECT pg_backend_pid()";
            case MARIADB, MYSQL -> "SELECT CONNECTION_ID()";
            case H2 -> "SELECT SESSION_ID()";
        };
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(query)) {
            rs.next();
            return rs.getString(1);
        }
    }

    /** How many sessions wait for a lock that {@code session} holds. */
    private int waitersOn(String session) throws SQLException {
        String query = switch (dialect()) {
            case POSTGRESQL ->
                "SELECT count(*) FROM pg_stat_activity WHERE CAST(? AS INTEGER) = ANY(pg_blocking_pids(pid))";
            case MARIADB, MYSQL ->
                "SELECT count(*) FROM information_schema.innodb_lock_waits w JOIN information_schema.innodb_trx b"
                        + " ON b.trx_id = w.blocking_trx_id WHERE b.trx_mysql_thread_id = ?";
            case H2 -> "SELECT COUNT(*) FROM INFORMATION_SCHEMA.SESSIONS WHERE BLOCKER_ID = CAST(? AS INTEGER)";
        };
        try (Connection c = database().getConnection();
                PreparedStatement ps = c.prepareStatement(query)) {
            ps.setString(1, session);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    // ---------------------------------------------------------------- completion in the handler's transaction

    /** Records the effect of payment {@code id} in the handler's transaction (a row unique per key). */
    private void applyEffect(Connection c, IdempotencyKey k) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO effects_in_tx (id) VALUES (?)")) {
            ps.setString(1, k.storageId());
            ps.executeUpdate();
        }
    }

    private int effects(IdempotencyKey k) throws SQLException {
        try (Connection c = database().getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM effects_in_tx WHERE id = ?")) {
            ps.setString(1, k.storageId());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } finally {
            endReadOn(database());
        }
    }

    /** A manual-commit pool hands back a connection mid-transaction after a read; end it so no snapshot lingers. */
    private void endReadOn(DataSource ds) throws SQLException {
        if (!autoCommitPool()) {
            try (Connection c = ds.getConnection()) {
                c.rollback();
            }
        }
    }

    private void createEffectsTable() throws SQLException {
        try (Connection c = database().getConnection();
                Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS effects_in_tx (id VARCHAR(200) PRIMARY KEY)");
            if (!c.getAutoCommit()) {
                c.commit();
            }
        }
    }

    /** Claims {@code k} for "owner-a" with {@link #LEASE}: the context of that handling. */
    private HandlingContext claimedByOwnerA(IdempotencyKey k) {
        ClaimResult.Acquired a = (ClaimResult.Acquired) store.claim(ClaimRequest.of(k, "owner-a", LEASE));
        return HandlingContext.of(k, Delivery.of("pay-1"), 0, "owner-a", a.fencingToken(), false);
    }

    private Guard guardOf(JdbcStore jdbc) {
        return Guard.builder(jdbc)
                .namespace(namespace)
                .lease(LEASE)
                .retention(RETENTION)
                .watchdog(false)
                .build();
    }

    @Test
    void completeInTransaction_commitsWithTheEffect_soTheCopyIsADuplicateWithTheResult() throws SQLException {
        createEffectsTable();
        JdbcStore jdbc = (JdbcStore) store;
        OwnTransaction own = OwnTransaction.of(database());
        IdempotencyKey k = key("pay-1");
        try (Guard guard = guardOf(jdbc)) {
            Outcome first = guard.handle(
                    Delivery.of("pay-1"),
                    ctx -> own.run(c -> {
                        applyEffect(c, k);
                        return jdbc.completeInTransaction(c, ctx, Outcome.processed(bytes("receipt-7")));
                    }));
            Outcome copy = guard.handle(
                    Delivery.of("pay-1"),
                    ctx -> own.run(c -> {
                        applyEffect(c, k);
                        return jdbc.completeInTransaction(c, ctx, Outcome.processed());
                    }));

            assertThat(first.type()).isEqualTo(Outcome.Type.PROCESSED);
            assertThat(copy.type()).isEqualTo(Outcome.Type.DUPLICATE);
            assertThat(copy.result()).hasValue(bytes("receipt-7"));
        }
        assertThat(effects(k)).isEqualTo(1);
        assertThat(store.lookup(k).orElseThrow().state()).isEqualTo(StoredRecord.State.DONE);
    }

    @Test
    void completeInTransaction_rolledBackWithTheEffect_leavesTheKeyToTheRedelivery() throws SQLException {
        createEffectsTable();
        JdbcStore jdbc = (JdbcStore) store;
        OwnTransaction own = OwnTransaction.of(database());
        IdempotencyKey k = key("pay-1");
        try (Guard guard = guardOf(jdbc)) {
            Outcome failed = guard.handle(
                    Delivery.of("pay-1"),
                    ctx -> own.run(c -> {
                        applyEffect(c, k);
                        jdbc.completeInTransaction(c, ctx, Outcome.processed());
                        throw new IllegalStateException("the gateway refused the charge");
                    }));
            assertThat(failed.type()).isEqualTo(Outcome.Type.FAILED);
            assertThat(store.lookup(k)).as("the claim released").isEmpty();
            assertThat(effects(k)).isZero();

            Outcome redelivery = guard.handle(
                    Delivery.of("pay-1"),
                    ctx -> own.run(c -> {
                        applyEffect(c, k);
                        return jdbc.completeInTransaction(c, ctx, Outcome.processed());
                    }));
            assertThat(redelivery.type()).isEqualTo(Outcome.Type.PROCESSED);
        }
        assertThat(effects(k)).isEqualTo(1);
    }

    /** A handler that outlived its lease while another consumer took the claim over: its effect must not commit. */
    @Test
    void completeInTransaction_ofAClaimTakenOver_throws_soTheEffectRollsBack() throws SQLException {
        createEffectsTable();
        JdbcStore jdbc = (JdbcStore) store;
        IdempotencyKey k = key("pay-1");
        ClaimResult.Acquired a = (ClaimResult.Acquired) store.claim(ClaimRequest.of(k, "owner-a", timedLease()));
        advance(timedLease().plusMillis(500));
        assertThat(store.claim(ClaimRequest.of(k, "owner-b", timedLease()))).isInstanceOf(ClaimResult.TakenOver.class);
        HandlingContext stale = HandlingContext.of(k, Delivery.of("pay-1"), 0, "owner-a", a.fencingToken(), false);

        Outcome outcome = OwnTransaction.of(database()).run(c -> {
            applyEffect(c, k);
            return jdbc.completeInTransaction(c, stale, Outcome.processed());
        });

        assertThat(outcome.type()).isEqualTo(Outcome.Type.FAILED);
        assertThat(outcome.cause().orElseThrow())
                .isInstanceOf(RetryLaterException.class)
                .hasMessageContaining("no longer this handling's");
        assertThat(effects(k)).isZero();
        assertThat(store.lookup(k).orElseThrow().owner()).isEqualTo("owner-b");
    }

    /**
     * The completion locks the claim's row until the handler's transaction ends: a consumer that takes the lapsed
     * claim over meanwhile waits, then finds the key done instead of running the effect a second time.
     */
    @Test
    @Timeout(60)
    void completeInTransaction_holdsTheClaimAgainstATakeover_untilItCommits() throws Exception {
        assumeFalse(keepsItsOwnTime(), "the lease must lapse while the transaction is open: the test's clock moves it");
        createEffectsTable();
        JdbcStore jdbc = (JdbcStore) store;
        IdempotencyKey k = key("pay-1");
        HandlingContext context = claimedByOwnerA(k);
        try (OwnedTransaction tx = OwnedTransaction.begin(database(), dialect(), false)) {
            applyEffect(tx.connection(), k);
            jdbc.completeInTransaction(tx.connection(), context, Outcome.processed());
            advance(LEASE.plusMillis(1));

            CompletableFuture<ClaimResult> takeover = claimWhileBlockedBy(tx, jdbc, k, "owner-b");
            assertThat(tx.commit().fate()).isEqualTo(OwnedTransaction.Fate.COMMITTED);

            assertThat(takeover.get(30, TimeUnit.SECONDS)).isInstanceOf(ClaimResult.Done.class);
        }
        assertThat(effects(k)).isEqualTo(1);
    }

    /**
     * Review: the lease watchdog (one thread for the JVM) and the guard's release waited without bound on the claim's
     * row while a completion in a handler's transaction held it, e.g. one whose commit never came back. The extend now
     * fails at once (the watchdog retries at its next sweep), the release after a few seconds (a copy's claim holds
     * the row for a moment, and a release that gave up leaves the message waiting for the lease). Waiting, either would
     * outlast this test's timeout: for ever on PostgreSQL, 50 s on MariaDB.
     */
    @Test
    @Timeout(30)
    void extendAndRelease_ofARowAHandlersTransactionHolds_giveUpInsteadOfWaiting() throws SQLException {
        assumeTrue(dialect() != Dialect.H2, "H2 runs in the JVM: its lock timeout bounds the wait");
        JdbcStore jdbc = (JdbcStore) store;
        IdempotencyKey k = key("pay-1");
        HandlingContext context = claimedByOwnerA(k);
        try (OwnedTransaction tx = OwnedTransaction.begin(database(), dialect(), false)) {
            jdbc.completeInTransaction(tx.connection(), context, Outcome.processed());

            assertThatThrownBy(() -> store.extend(k, "owner-a", LEASE))
                    .isInstanceOf(StoreUnavailableException.class)
                    .hasMessageContaining("locked by another transaction");
            assertThatThrownBy(() -> store.release(k, "owner-a"))
                    .isInstanceOf(StoreUnavailableException.class)
                    .hasMessageContaining("locked by another transaction");
            tx.rollback();
        }
        assertThat(store.extend(k, "owner-a", LEASE)).isEqualTo(UpdateResult.APPLIED);
        assertThat(store.release(k, "owner-a")).isEqualTo(UpdateResult.APPLIED);
    }

    /**
     * Review: a claim of a key whose row a handler's transaction holds (for ever, if its commit never came back)
     * waited without bound on PostgreSQL, hanging the consumer's thread. It waits {@link Sql#CLAIM_LOCK_WAIT_SECONDS},
     * then answers in progress as the row last committed says, never "store unavailable" (which a fail-open guard
     * would answer by running the handler unguarded). MariaDB's own lock wait bounds its claim.
     */
    @Test
    @Timeout(60)
    void claim_ofARowAHandlersTransactionKeepsLocked_isInProgress_afterABoundedWait() throws SQLException {
        assumeTrue(dialect() == Dialect.POSTGRESQL, "the bound is PostgreSQL's; MariaDB's lock wait is the server's");
        assumeFalse(keepsItsOwnTime(), "the lease must lapse while the transaction is open: the test's clock moves it");
        JdbcStore jdbc = (JdbcStore) store;
        IdempotencyKey k = key("pay-1");
        HandlingContext context = claimedByOwnerA(k);
        try (OwnedTransaction tx = OwnedTransaction.begin(database(), dialect(), false)) {
            jdbc.completeInTransaction(tx.connection(), context, Outcome.processed());
            advance(LEASE.plusMillis(1));

            assertThat(store.claim(ClaimRequest.of(k, "owner-b", LEASE)))
                    .isInstanceOfSatisfying(
                            ClaimResult.InProgress.class,
                            p -> assertThat(p.owner()).isEqualTo("owner-a"));
            tx.rollback();
        }
        assertThat(store.claim(ClaimRequest.of(k, "owner-b", LEASE))).isInstanceOf(ClaimResult.TakenOver.class);
    }

    @Test
    void completeInTransaction_onAnAutoCommitConnection_isRefused_andWritesNothing() throws SQLException {
        JdbcStore jdbc = (JdbcStore) store;
        IdempotencyKey k = key("pay-1");
        HandlingContext context = claimedByOwnerA(k);

        try (Connection c = database().getConnection()) {
            c.setAutoCommit(true);
            assertThatThrownBy(() -> jdbc.completeInTransaction(c, context, Outcome.processed()))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("autoCommit")
                    .hasMessageContaining("setAutoCommit(false)");
        }
        assertThat(store.lookup(k).orElseThrow().state()).isEqualTo(StoredRecord.State.PROCESSING);
    }

    @Test
    void completeInTransaction_onAConnectionToAnotherDatabase_saysSo() throws SQLException {
        JdbcStore jdbc = (JdbcStore) store;
        IdempotencyKey k = key("pay-1");
        HandlingContext context = claimedByOwnerA(k);
        String name = getClass().getSimpleName() + "Other";
        try (TestDatabase other = switch (dialect()) {
            case POSTGRESQL -> TestDatabase.postgres(name);
            case MARIADB, MYSQL -> TestDatabase.mariadb(name);
            case H2 -> TestDatabase.h2(name);
        }) {
            JdbcStore.builder(other.dataSource()).createTableIfMissing(true).build();

            Outcome outcome = OwnTransaction.of(other.dataSource())
                    .run(c -> jdbc.completeInTransaction(c, context, Outcome.processed()));

            assertThat(outcome.type()).isEqualTo(Outcome.Type.FAILED);
            assertThat(outcome.cause().orElseThrow())
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("does not see the claim")
                    .hasMessageContaining("store's own database");
        }
        assertThat(store.lookup(k).orElseThrow().state()).isEqualTo(StoredRecord.State.PROCESSING);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    /**
     * Review: purge deleted a claim whose lease had just lapsed with nobody taking it over (its consumer paused past
     * the lease), so the owner's late completion found nothing and a later copy ran the effect again. A lapsed claim
     * still belongs to its owner until someone takes it over; purge keeps it {@link Purge#LAPSED_CLAIM_KEPT} longer.
     */
    @Test
    void purge_keepsAClaimThatJustLapsed_soItsOwnerCanStillCompleteIt() {
        IdempotencyKey paused = key("paused");
        store.claim(ClaimRequest.of(paused, "owner-a", timedLease()));
        advance(timedLease().plus(Duration.ofMillis(500)));

        ((JdbcStore) store).purgeExpired();

        assertThat(store.complete(paused, "owner-a", null, timedRetention())).isEqualTo(UpdateResult.APPLIED);
        assertThat(store.claim(ClaimRequest.of(paused, "owner-b", timedLease())))
                .isInstanceOf(ClaimResult.Done.class);
    }
}
