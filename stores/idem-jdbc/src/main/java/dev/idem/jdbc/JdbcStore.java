package dev.idem.jdbc;

import dev.idem.ConfigurationException;
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
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.function.Supplier;
import java.util.stream.IntStream;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * A lease store in a PostgreSQL, MariaDB or H2 table, for effects outside the database (an HTTP call, an e-mail).
 * Use {@link JdbcInbox} instead when the effect is a write to the same database; when a handler's effect ends in a
 * write to this database (after a call elsewhere, or beside it), complete its claim in that write's transaction with
 * {@link #completeInTransaction}.
 *
 * <pre>{@code
 * IdempotencyStore store = JdbcStore.builder(dataSource).build();   // table idem_keys, see the shipped DDL
 * Guard guard = Guard.builder(store).namespace("payments").build();
 * }</pre>
 *
 * <p>Each operation is atomic under concurrency and, but for {@link #completeInTransaction}, never joins a caller's
 * transaction. On PostgreSQL a claim is one
 * statement (an upsert that locks the key's row, reads it, and takes it when it is free, expired or the caller's own); on MariaDB a free key is
 * claimed by one conflict-free insert and a done or live key answered by one read, and only a row to rewrite (an
 * expired lease or retention) takes a short transaction that locks it ({@code SELECT ... FOR UPDATE}), as every claim
 * does on H2. {@code complete}, {@code release} and {@code extend} are single owner-checked statements, which read the
 * database's clock inline when it is used.
 *
 * <p><b>Fencing tokens</b> come from one database sequence per table ({@code <table>_fencing}). A sequence is
 * monotonic across all namespaces, so it is monotonic in each, and unlike a counter row per namespace it is never a
 * hot row: {@code nextval} takes no lock that lasts until commit. Tokens have gaps (a value drawn by a claim that
 * lost its race is not reused). MySQL has no sequences, so lease mode runs on PostgreSQL, MariaDB and H2; {@link
 * JdbcInbox} runs on MySQL too.
 *
 * <p>Lease deadlines and retention follow the builder's clock, or the database's clock with {@link
 * Builder#useDatabaseClock(boolean)} so that nodes with skewed clocks agree. Times are stored as epoch
 * milliseconds. A database that cannot be reached (or a broken connection) raises {@link StoreUnavailableException};
 * a missing table raises {@link ConfigurationException} naming the DDL to run.
 *
 * <p>Immutable and thread-safe. The store does not own the {@link DataSource}: {@link #close()} does not close it.
 */
public final class JdbcStore implements IdempotencyStore {

    private static final int CLAIM_ATTEMPTS = 100;
    private static final int DEADLOCK_RETRIES = 5;
    private static final int EXTEND_TRIES = 7;
    private static final long EXTEND_FIRST_PAUSE_MILLIS = 2;

    private final DataSource dataSource;
    private final Sql sql;
    private final Clock clock;
    private final boolean databaseClock;
    private final int purgeBatchSize;
    private final String description;
    private volatile boolean closed;

    private JdbcStore(Builder b, Dialect dialect) {
        this.dataSource = b.dataSource;
        this.sql = new Sql(dialect, b.table);
        this.clock = b.clock;
        this.databaseClock = b.databaseClock;
        this.purgeBatchSize = b.purgeBatchSize;
        this.description = dialect.name().toLowerCase(java.util.Locale.ROOT) + " " + b.table;
    }

    /** A builder for a store on {@code dataSource} (any pool; the store borrows a connection per operation). */
    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    // ---------------------------------------------------------------- claims

    @Override
    public ClaimResult claim(ClaimRequest request) {
        Supplier<String> what = () -> "claim " + request.key().logId();
        if (sql.dialect == Dialect.POSTGRESQL) {
            return inAutoCommit(what, c -> upsertClaim(c, request));
        }
        if (sql.dialect == Dialect.MARIADB) {
            Optional<ClaimResult> settled = inAutoCommit(what, c -> insertOrRead(c, request));
            if (settled.isPresent()) {
                return settled.get();
            }
        }
        return inTransaction(what, tx -> claimIn(tx, request));
    }

    /**
     * MariaDB's claim without a transaction where it can be: a conflict-free insert claims a free key; else a read
     * answers a key that is done or held by another owner's live lease. Null when the row must be rewritten (an
     * expired lease or retention, the caller's own claim): that takes the locking transaction.
     */
    private Optional<ClaimResult> insertOrRead(Connection c, ClaimRequest request) throws SQLException {
        String id = request.key().storageId();
        long now = now(c);
        long leaseUntil = now + request.lease().toMillis();
        Long token;
        try {
            token = sql.insertClaims(
                            c, List.of(new Sql.NewClaim(id, request.owner(), leaseUntil, request.fingerprint())))
                    .get(id);
        } catch (SQLException e) {
            return Optional.of(heldByATransaction(e, c, request));
        }
        if (token != null) {
            return Optional.of(new ClaimResult.Claimed(request.owner(), token, Instant.ofEpochMilli(leaseUntil)));
        }
        Row row = sql.select(c, id, Sql.Lock.NONE);
        if (row == null || !row.live(now) || row.owner().equals(request.owner())) {
            return Optional.empty();
        }
        return Optional.of(
                row.done()
                        ? done(row, now)
                        : new ClaimResult.InProgress(
                                row.owner(), Instant.ofEpochMilli(row.expiresAt()), row.fingerprint()));
    }

    /**
     * PostgreSQL's claim: one atomic upsert that claims a free, expired or own key and reads the row it replaced. A
     * key inserted by a claim racing this one, or a serialization failure under repeatable read, makes it try again.
     */
    private ClaimResult upsertClaim(Connection c, ClaimRequest request) throws SQLException {
        String id = request.key().storageId();
        for (int attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
            Sql.UpsertedClaim upsert;
            try {
                upsert = sql.upsertClaim(
                        c, id, request.owner(), givenNow(), request.lease().toMillis(), request.fingerprint());
            } catch (SQLException e) {
                if (SqlErrors.isDeadlock(e)) {
                    continue; // a row changed since the statement's snapshot (repeatable read): nothing was written
                }
                return heldByATransaction(e, c, request);
            }
            Row before = upsert.before();
            Long token = upsert.token();
            if (token != null) {
                Instant until = Instant.ofEpochMilli(upsert.leaseUntil());
                if (upsert.inserted()
                        || (before != null && (before.done() || before.owner().equals(request.owner())))) {
                    return new ClaimResult.Claimed(request.owner(), token, until);
                }
                String previous = before == null ? "(a claim made while this one ran)" : before.owner();
                return new ClaimResult.TakenOver(request.owner(), token, until, previous);
            }
            if (before != null && before.live(upsert.now())) {
                return before.done()
                        ? done(before, upsert.now())
                        : new ClaimResult.InProgress(
                                before.owner(), Instant.ofEpochMilli(before.expiresAt()), before.fingerprint());
            }
        }
        throw new StoreUnavailableException(
                description, "claim of " + request.key().logId() + " kept losing races; retry later", null);
    }

    /**
     * The answer to a claim whose statement failed with {@code e}, rethrown unless a lock wait: a key's row another
     * transaction kept locked past {@code Sql.CLAIM_LOCK_WAIT_SECONDS}
     * (MariaDB's locking read: past the server's {@code innodb_lock_wait_timeout}): a handler's transaction holding
     * its completion, or one whose commit never came back (its session keeps the lock until the server ends it). In
     * progress, as the row last committed says; never a store failure, which a fail-open guard would answer by running
     * the handler unguarded.
     */
    private ClaimResult heldByATransaction(SQLException e, Connection c, ClaimRequest request) throws SQLException {
        if (!SqlErrors.isLockWait(e)) {
            throw e;
        }
        Row row = sql.select(c, request.key().storageId(), Sql.Lock.NONE);
        return row == null
                ? new ClaimResult.InProgress(
                        "(a transaction not yet committed)",
                        Instant.ofEpochMilli(now(c) + request.lease().toMillis()),
                        null)
                : new ClaimResult.InProgress(row.owner(), Instant.ofEpochMilli(row.expiresAt()), row.fingerprint());
    }

    @SuppressWarnings(
            "NullAway") // a stored result is `byte @Nullable []`: NullAway reads that only in JSpecify mode (JDK 22+)
    private static ClaimResult.Done done(Row row, long now) {
        return new ClaimResult.Done(
                Instant.ofEpochMilli(Objects.requireNonNullElse(row.completedAt(), now)),
                Instant.ofEpochMilli(row.expiresAt()),
                row.fingerprint(),
                row.result());
    }

    private ClaimResult claimIn(OwnedTransaction tx, ClaimRequest request) throws SQLException {
        String id = request.key().storageId();
        long now = now(tx.connection());
        long leaseUntil = now + request.lease().toMillis();
        for (int attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
            Connection c = tx.connection();
            Row row;
            try {
                row = sql.select(c, id, Sql.Lock.EXCLUSIVE);
            } catch (SQLException e) {
                if (SqlErrors.isLockWait(e)) {
                    tx.rollback(); // the locking read gave up: end its transaction before reading the row as it is
                }
                return heldByATransaction(e, c, request);
            }
            if (row == null) {
                Map<String, Long> inserted = sql.insertClaims(
                        c, List.of(new Sql.NewClaim(id, request.owner(), leaseUntil, request.fingerprint())));
                if (inserted.containsKey(id)) {
                    commit(tx);
                    return new ClaimResult.Claimed(request.owner(), inserted.get(id), Instant.ofEpochMilli(leaseUntil));
                }
                // Another transaction inserted the key meanwhile. Start over in a new transaction, so that the
                // shared lock the conflicting insert took (MySQL) is not upgraded: two upgrades deadlock.
                tx.rollback();
                continue;
            }
            List<Sql.Reclaim> reclaims = new ArrayList<>(1);
            ClaimResult result = decide(c, row, request, id, now, leaseUntil, reclaims);
            sql.reclaim(c, reclaims);
            commit(tx);
            return result;
        }
        throw new StoreUnavailableException(
                description, "claim of " + request.key().logId() + " kept losing races; retry later", null);
    }

    /** What a claim does to an existing row it holds locked; rewrites go to {@code reclaims}. */
    @SuppressWarnings(
            "NullAway") // a stored result is `byte @Nullable []`: NullAway reads that only in JSpecify mode (JDK 22+)
    private ClaimResult decide(
            Connection c,
            Row row,
            ClaimRequest request,
            String id,
            long now,
            long leaseUntil,
            List<Sql.Reclaim> reclaims)
            throws SQLException {
        Instant until = Instant.ofEpochMilli(leaseUntil);
        if (row.done()) {
            if (row.live(now)) {
                return done(row, now);
            }
            long token = sql.nextToken(c);
            reclaims.add(new Sql.Reclaim(id, request.owner(), token, leaseUntil, request.fingerprint()));
            return new ClaimResult.Claimed(request.owner(), token, until);
        }
        if (row.owner().equals(request.owner())) {
            reclaims.add(new Sql.Reclaim(id, request.owner(), row.fencingToken(), leaseUntil, request.fingerprint()));
            return new ClaimResult.Claimed(request.owner(), row.fencingToken(), until);
        }
        if (row.live(now)) {
            return new ClaimResult.InProgress(row.owner(), Instant.ofEpochMilli(row.expiresAt()), row.fingerprint());
        }
        long token = sql.nextToken(c);
        reclaims.add(new Sql.Reclaim(id, request.owner(), token, leaseUntil, request.fingerprint()));
        return new ClaimResult.TakenOver(request.owner(), token, until, row.owner());
    }

    /**
     * Claims the keys in one transaction: one statement reads and locks the existing rows in key order, one
     * multi-row insert ({@code RETURNING} on PostgreSQL and MariaDB) claims the free keys in key order, one batch
     * rewrites the rows to take over. Keys that another transaction inserted meanwhile are claimed one by one after
     * it; when another transaction holds one of the rows or is inserting one of the keys (PostgreSQL, MariaDB), every
     * key is, so that the batch never waits for it while it holds the others.
     */
    @Override
    public List<ClaimResult> claimAll(List<ClaimRequest> requests) {
        var seen = new HashSet<String>();
        for (ClaimRequest r : requests) {
            if (!seen.add(r.key().storageId())) {
                throw new IllegalArgumentException(
                        "batch claims key " + r.key().logId() + " twice: deduplicate a batch before claiming it");
            }
        }
        if (requests.isEmpty()) {
            return List.of();
        }
        List<Integer> order = IntStream.range(0, requests.size())
                .boxed()
                .sorted(Comparator.comparing(i -> requests.get(i).key().storageId(), Sql.ID_ORDER))
                .toList();
        ClaimResult[] results = inTransaction(() -> "claim of " + requests.size() + " keys", tx -> {
            Connection c = tx.connection();
            ClaimResult[] answers = new ClaimResult[requests.size()];
            long now = now(c);
            List<String> ids =
                    order.stream().map(i -> requests.get(i).key().storageId()).toList();
            Map<String, Row> rows;
            try {
                rows = sql.selectMany(c, ids, Sql.Lock.EXCLUSIVE_NOWAIT);
            } catch (SQLException e) {
                return eachAloneAfter(e, tx, requests.size());
            }
            List<Sql.NewClaim> fresh = new ArrayList<>();
            List<Sql.Reclaim> reclaims = new ArrayList<>();
            for (int i : order) {
                ClaimRequest r = requests.get(i);
                String id = r.key().storageId();
                long leaseUntil = now + r.lease().toMillis();
                Row row = rows.get(id);
                if (row == null) {
                    fresh.add(new Sql.NewClaim(id, r.owner(), leaseUntil, r.fingerprint()));
                } else {
                    answers[i] = decide(c, row, r, id, now, leaseUntil, reclaims);
                }
            }
            Map<String, Long> tokens;
            try {
                tokens = sql.insertClaims(c, fresh, false);
            } catch (SQLException e) {
                return eachAloneAfter(e, tx, requests.size());
            }
            sql.reclaim(c, reclaims);
            commit(tx);
            for (int i : order) {
                ClaimRequest r = requests.get(i);
                Long token = tokens.get(r.key().storageId());
                if (token != null) {
                    answers[i] = new ClaimResult.Claimed(
                            r.owner(),
                            token,
                            Instant.ofEpochMilli(now + r.lease().toMillis()));
                }
            }
            return answers;
        });
        for (int i : order) {
            if (results[i] == null) {
                results[i] = claim(requests.get(i));
            }
        }
        return Arrays.asList(results);
    }

    /**
     * A batch claim that met a row another transaction holds rolls back and answers nothing, so that each key is
     * claimed alone, holding no other row while it waits; any other failure is rethrown.
     */
    private static ClaimResult[] eachAloneAfter(SQLException e, OwnedTransaction tx, int keys) throws SQLException {
        if (!SqlErrors.isLockWait(e)) {
            throw e;
        }
        tx.rollback();
        return new ClaimResult[keys];
    }

    // ---------------------------------------------------------------- owner-checked changes

    @Override
    public UpdateResult complete(IdempotencyKey key, String owner, byte @Nullable [] result, Duration retention) {
        return inAutoCommit(() -> "complete " + key.logId(), c -> {
            int n = sql.complete(c, key.storageId(), owner, givenNow(), retention.toMillis(), result);
            return n == 1 ? UpdateResult.APPLIED : completedAlready(c, key, owner, now(c));
        });
    }

    /**
     * Completes the guarded handling {@code context} in the caller's open transaction on {@code connection}, a
     * connection to this store's database: the completion commits with the handler's writes, or rolls back with
     * them, and the guard records no completion of its own (one commit fewer per message); outside {@link
     * OwnTransaction} it reads the claim back to learn that the transaction committed. The completion locks the
     * claim's row until the transaction ends, so a consumer that takes the claim over meanwhile waits and then finds it
     * done (under {@link OwnTransaction} the lease watchdog pauses its renewals meanwhile); a claim already taken over
     * throws instead, so the effect rolls back rather than apply a second time. Write it last in the transaction (on PostgreSQL under repeatable read or
     * serializable: first, before any other statement), and return what it answers:
     *
     * <pre>{@code
     * guard.handle(delivery, context -> tx.run(c -> {
     *     debit(c, payment);
     *     return store.completeInTransaction(c, context, Outcome.processed());
     * }));
     * }</pre>
     *
     * @return {@code outcome}, noted as completed for the guard ({@link Outcome#withCompletionRecorded})
     * @throws RetryLaterException when the claim is no longer this handling's (its lease ended and another consumer
     *     took it over, or it was purged): the transaction must roll back, and the redelivery finds the claim's state
     * @throws IllegalArgumentException when {@code connection} is in auto-commit mode, or {@code outcome} is not final
     * @throws IllegalStateException when {@code connection} does not see the claim that this store holds (it belongs
     *     to another database or schema than the store's, or its snapshot predates the claim), or cannot change it
     *     (a PostgreSQL snapshot older than the claim's last renewal)
     * @throws SQLException from the driver; the transaction must roll back
     */
    public Outcome completeInTransaction(Connection connection, HandlingContext context, Outcome outcome)
            throws SQLException {
        OwnTransaction.requireTransaction(connection, "JdbcStore.completeInTransaction");
        // OwnTransaction answers a final outcome only once committed; another transaction manager is checked by the
        // guard
        Outcome recorded = OwnTransaction.runs(connection)
                ? outcome.withCompletionCommitted(context)
                : outcome.withCompletionRecorded(context);
        if (!context.guarded()) {
            return outcome; // fail-open while the store was unreachable: no claim to complete
        }
        IdempotencyKey key = context.key();
        String owner = context.owner();
        if (completeIn(connection, context, outcome.result().orElse(null)) == 1) {
            pauseRenewals(connection, context);
            return recorded;
        }
        UpdateResult missed = completedAlready(connection, key, owner, now(connection));
        if (missed == UpdateResult.APPLIED) {
            pauseRenewals(connection, context);
            return recorded;
        }
        if (missed == UpdateResult.NOT_FOUND
                && lookup(key).filter(r -> r.owner().equals(owner)).isPresent()) {
            throw new IllegalStateException("JdbcStore.completeInTransaction got a connection that does not see the"
                    + " claim this store (" + description + ") holds for " + key.logId() + ": "
                    + (snapshotBeforeTheClaim(connection)
                            ? "its transaction's snapshot was taken before the claim (repeatable read or serializable,"
                                    + " and a read before the guard ran): begin the transaction inside the handler"
                            : "pass a connection of the store's own database and schema, in the transaction of the"
                                    + " handler's writes"));
        }
        throw new RetryLaterException(
                "the claim of " + key.logId() + " is no longer this handling's (" + missed + ": its lease ended and"
                        + " another consumer took it over, or it was purged): roll this transaction back, the"
                        + " redelivery finds the claim's state",
                null);
    }

    /**
     * Under {@link OwnTransaction}, which ends each attempt's transaction with its connection, the watchdog pauses its
     * renewals of the claim while that connection is open: its transaction holds the claim's row. Another transaction
     * manager may retry on the same connection, whose rollback frees the row while it stays open: there the renewals go
     * on (one that meets the held row fails at once and is retried at the next sweep).
     */
    private static void pauseRenewals(Connection connection, HandlingContext context) {
        if (OwnTransaction.runs(connection)) {
            context.pauseLeaseRenewalWhile(() -> {
                try {
                    return !connection.isClosed();
                } catch (SQLException e) {
                    return false;
                }
            });
        }
    }

    /** The owner-checked completion on the caller's connection: 1 when it changed the claim's row. */
    private int completeIn(Connection connection, HandlingContext context, byte @Nullable [] result)
            throws SQLException {
        IdempotencyKey key = context.key();
        long retention = context.retention().toMillis();
        try {
            return sql.complete(connection, key.storageId(), context.owner(), givenNow(), retention, result);
        } catch (SQLException e) {
            if (sql.dialect == Dialect.POSTGRESQL && SqlErrors.isSerializationFailure(e)) {
                // not retryable as it stands: each retry's snapshot meets the watchdog's next extension again
                throw new IllegalStateException("JdbcStore.completeInTransaction: the claim's row of " + key.logId()
                        + " changed after this transaction's snapshot (SQLState " + e.getSQLState() + ": the lease"
                        + " watchdog extends it every third of the lease, or another consumer took it over): under"
                        + " repeatable read or serializable, call completeInTransaction first in the transaction,"
                        + " before any other statement, or run the transaction at READ COMMITTED");
            }
            throw e;
        }
    }

    /**
     * Whether a PostgreSQL transaction runs on one snapshot (repeatable read, serializable), whose UPDATE cannot see,
     * or fails on, a row committed after it began (MariaDB's UPDATE reads the latest committed row whatever the level).
     */
    private boolean snapshotBeforeTheClaim(Connection c) throws SQLException {
        return sql.dialect == Dialect.POSTGRESQL
                && c.getTransactionIsolation() >= Connection.TRANSACTION_REPEATABLE_READ;
    }

    @Override
    public UpdateResult release(IdempotencyKey key, String owner) {
        return inAutoCommit(() -> "release " + key.logId(), c -> {
            int n = sql.release(c, key.storageId(), owner);
            return n == 1 ? UpdateResult.APPLIED : missed(c, key, now(c));
        });
    }

    /**
     * Renews the lease without waiting long for a row another transaction holds: a copy's claim holds it for a moment
     * (on PostgreSQL the extension waits for it at most {@link Sql#EXTEND_LOCK_WAIT}; on MariaDB it is tried {@link
     * #EXTEND_TRIES} times, after pauses doubling from {@link #EXTEND_FIRST_PAUSE_MILLIS} ms, about an eighth of a
     * second in all), a handler's transaction holding its completion until it commits. The lease watchdog, one thread
     * for the JVM, retries a row still held at its next sweep instead of waiting on it.
     */
    @Override
    public UpdateResult extend(IdempotencyKey key, String owner, Duration lease) {
        int tries = sql.extendWaitsForTheRow() ? 1 : EXTEND_TRIES;
        return inAutoCommit(() -> "extend " + key.logId(), c -> {
            for (int attempt = 1; ; attempt++) {
                int n;
                try {
                    n = sql.extend(c, key.storageId(), owner, givenNow(), lease.toMillis());
                } catch (SQLException e) {
                    if (!SqlErrors.isLockWait(e)
                            || attempt == tries
                            || !pause(EXTEND_FIRST_PAUSE_MILLIS << (attempt - 1))) {
                        throw e;
                    }
                    continue;
                }
                return n == 1 ? UpdateResult.APPLIED : completedAlready(c, key, owner, now(c));
            }
        });
    }

    private static boolean pause(long millis) {
        try {
            Thread.sleep(millis);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * A completion retried by its owner after a lost reply, or a watchdog tick that raced its owner's completion,
     * finds the owner's own completion: applied, unchanged. Anything else is why the owner-checked statement changed
     * nothing.
     */
    private UpdateResult completedAlready(Connection c, IdempotencyKey key, String owner, long now)
            throws SQLException {
        Row row = sql.select(c, key.storageId(), Sql.Lock.NONE);
        if (row != null && row.done() && row.owner().equals(owner)) {
            return UpdateResult.APPLIED;
        }
        return missed(row, now);
    }

    /** Why an owner-checked statement changed nothing. */
    private UpdateResult missed(Connection c, IdempotencyKey key, long now) throws SQLException {
        return missed(sql.select(c, key.storageId(), Sql.Lock.NONE), now);
    }

    private static UpdateResult missed(@Nullable Row row, long now) {
        if (row == null || (row.done() && !row.live(now))) {
            return UpdateResult.NOT_FOUND;
        }
        return UpdateResult.NOT_OWNER;
    }

    @Override
    public Optional<StoredRecord> lookup(IdempotencyKey key) {
        return inAutoCommit(() -> "lookup " + key.logId(), c -> {
            Row row = sql.select(c, key.storageId(), Sql.Lock.NONE);
            if (row == null || (row.done() && !row.live(now(c)))) {
                return Optional.empty();
            }
            return Optional.of(
                    StoredRecord.builder(key, row.done() ? StoredRecord.State.DONE : StoredRecord.State.PROCESSING)
                            .owner(row.owner())
                            .fencingToken(row.fencingToken())
                            .expiresAt(Instant.ofEpochMilli(row.expiresAt()))
                            .fingerprint(row.fingerprint())
                            .result(row.result())
                            .build());
        });
    }

    // ---------------------------------------------------------------- purge

    /**
     * Deletes completions whose retention has ended and claims whose lease ran out more than an hour ago (a crashed
     * consumer's claim that no redelivery took over; within the hour its owner may still complete it), in batches of {@code purgeBatchSize} rows, each its own short transaction, until
     * none is left; returns how many it deleted. Live claims are never touched. Uses the index on {@code expires_at}.
     */
    public int purgeExpired() {
        return Purge.run(dataSource, sql, purgeBatchSize, this::purgeNow, description);
    }

    /**
     * Runs {@link #purgeExpired()} every {@code interval} on {@code scheduler} (which the caller owns and shuts
     * down); a failed run is logged and the next one runs as planned. Cancel the returned future to stop.
     */
    public ScheduledFuture<?> schedulePurge(ScheduledExecutorService scheduler, Duration interval) {
        return Purge.schedule(scheduler, interval, this::purgeExpired, description);
    }

    private long purgeNow(Connection c) throws SQLException {
        return now(c);
    }

    // ---------------------------------------------------------------- plumbing

    @Override
    public String describe() {
        return description;
    }

    /** Marks the store closed: later calls throw {@link StoreUnavailableException}. The data source stays open. */
    @Override
    public void close() {
        closed = true;
    }

    private long now(Connection c) throws SQLException {
        return databaseClock ? sql.databaseNowMillis(c) : clock.millis();
    }

    /** The builder's clock now, or null for the database's clock, which a statement then reads inline. */
    private @Nullable Long givenNow() {
        return databaseClock ? null : clock.millis();
    }

    @FunctionalInterface
    private interface Work<T> {
        T run(Connection c) throws SQLException;
    }

    @FunctionalInterface
    private interface TransactionWork<T> {
        T run(OwnedTransaction tx) throws SQLException;
    }

    /**
     * Runs {@code work} in a transaction of its own (read committed on MySQL: no gap locks), retrying deadlocks. A
     * commit whose fate is unknown raises {@link StoreUnavailableException}: the guard answers {@code IN_PROGRESS}
     * and the redelivery finds out. {@code what} names the operation in an error, and is built only then (a key's
     * log id is a SHA-256).
     */
    private <T> T inTransaction(Supplier<String> what, TransactionWork<T> work) {
        ensureOpen();
        for (int attempt = 1; ; attempt++) {
            try (OwnedTransaction tx = OwnedTransaction.begin(dataSource, sql.dialect, true)) {
                return work.run(tx);
            } catch (SQLException e) {
                if (SqlErrors.isDeadlock(e) && attempt < DEADLOCK_RETRIES) {
                    continue;
                }
                throw SqlErrors.translate(e, description, sql.table, Schema.ddlResource(sql.dialect), what.get());
            }
        }
    }

    /** Commits, or throws what stopped the commit (a refusal to retry, or a fate unknown). */
    private static void commit(OwnedTransaction tx) throws SQLException {
        OwnedTransaction.Commit commit = tx.commit();
        if (commit.fate() != OwnedTransaction.Fate.COMMITTED) {
            throw Objects.requireNonNull(commit.cause());
        }
    }

    /**
     * Runs single statements (each atomic on its own) on a borrowed connection in auto-commit; on MariaDB/MySQL a
     * connection handed out with auto-commit off runs them in one transaction committed at once instead (every read
     * here follows the write it explains, see {@link AutoCommit#runCommittingInPlace}).
     */
    private <T> T inAutoCommit(Supplier<String> what, Work<T> work) {
        ensureOpen();
        try {
            return sql.mysqlFamily()
                    ? AutoCommit.runCommittingInPlace(dataSource, work::run)
                    : AutoCommit.run(dataSource, work::run);
        } catch (SQLException e) {
            throw SqlErrors.translate(e, description, sql.table, Schema.ddlResource(sql.dialect), what.get());
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new StoreUnavailableException(description, "the store is closed", null);
        }
    }

    /**
     * Builds a {@link JdbcStore}. Each setter checks its value at once; {@link #build()} detects the dialect (one
     * connection) unless it was set, and creates the table if asked to.
     */
    public static final class Builder extends JdbcBuilder<Builder> {
        private int purgeBatchSize = Purge.DEFAULT_BATCH_SIZE;

        private Builder(DataSource dataSource) {
            super(dataSource, Schema.DEFAULT_TABLE);
        }

        /** Rows deleted per purge transaction. Default 500; 1 to 10,000. */
        public Builder purgeBatchSize(int rows) {
            this.purgeBatchSize = Purge.checkBatchSize(rows);
            return this;
        }

        public JdbcStore build() {
            String store = "jdbc " + table;
            Dialect d = resolveDialect(store);
            if (d == Dialect.MYSQL) {
                throw new ConfigurationException("lease mode needs a database sequence for fencing tokens, and MySQL"
                        + " has none: use MariaDB, PostgreSQL or H2 for JdbcStore, or use JdbcInbox (transactional"
                        + " mode) or the Redis store on MySQL");
            }
            if (createTableIfMissing) {
                Schema.create(dataSource, d, table, store);
            }
            return new JdbcStore(this, d);
        }
    }
}
