package dev.idem.jdbc;

import dev.idem.ConfigurationException;
import dev.idem.Delivery;
import dev.idem.Fingerprint;
import dev.idem.HandlingContext;
import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.IdempotencyListener;
import dev.idem.InvalidKeyException;
import dev.idem.Outcome;
import dev.idem.RetryLaterException;
import dev.idem.StoreUnavailableException;
import dev.idem.internal.LeaseBounds;
import dev.idem.internal.SafeListener;
import dev.idem.internal.Timestamps;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The transactional dedup record ("inbox"): the handler's writes and the key's mark commit in one database
 * transaction, or neither does. For handlers whose effect is a write to this database; the strongest guarantee Idem
 * gives (no lease, no mark left behind, no window between effect and mark).
 *
 * <pre>{@code
 * JdbcInbox inbox = JdbcInbox.builder(dataSource).namespace("payments").build();
 * Outcome outcome = inbox.handle(Delivery.of(message.key(), Fingerprint.of(message.body())), connection -> {
 *     debit(connection, message);                 // same connection, same transaction as the mark
 *     return Outcome.processed();
 * });
 * }</pre>
 *
 * <p>How one handling runs: insert the key's mark with a conflict-free insert ({@code ON CONFLICT DO NOTHING} on
 * PostgreSQL, {@code INSERT IGNORE} on MariaDB/MySQL, a plain insert on H2, where a unique violation does not abort
 * the transaction). If it was inserted, run the handler on the same connection (a {@link BatchHandler} gets all the
 * new deliveries of a batch at once); {@code PROCESSED} and {@code
 * DUPLICATE} commit both, any other outcome or an exception rolls both back. If the key was taken: {@code DUPLICATE}
 * (with the stored result), or {@code REJECTED} when the stored payload fingerprint differs. A duplicate whose first
 * copy is still uncommitted waits on the key and then sees {@code DUPLICATE} (first committed) or runs (first rolled
 * back); if that takes longer than {@link Builder#lockWait(Duration)} it ends {@code IN_PROGRESS}. Deadlocks are
 * retried. A database that cannot be reached, or a commit whose fate is unknown, ends {@code IN_PROGRESS}: the
 * redelivery finds out.
 *
 * <p>Marks are kept for the retention window; an expired mark counts as absent. Shares its table (and {@link
 * #purgeExpired()}) with {@link JdbcStore}.
 *
 * <p>Immutable and thread-safe. Does not own the {@link DataSource}.
 */
public final class JdbcInbox {

    private final DataSource dataSource;
    private final Sql sql;
    private final String namespace;
    private final Clock clock;
    private final boolean databaseClock;
    private final Duration retention;
    private final int lockWaitSeconds;
    private final int deadlockRetries;
    private final int purgeBatchSize;
    private final SafeListener listener;
    private final boolean reportOutcomes;
    private final String description;

    private JdbcInbox(Builder b, Dialect dialect, String namespace) {
        this.dataSource = b.dataSource;
        this.sql = new Sql(dialect, b.table);
        this.namespace = namespace;
        this.clock = b.clock;
        this.databaseClock = b.databaseClock;
        this.retention = b.retention;
        this.lockWaitSeconds = (int) Math.max(1, (b.lockWait.toMillis() + 999) / 1000);
        this.deadlockRetries = b.deadlockRetries;
        this.purgeBatchSize = b.purgeBatchSize;
        this.listener = new SafeListener(b.listener);
        this.reportOutcomes = b.listener != IdempotencyListener.NONE;
        this.description =
                dialect.name().toLowerCase(java.util.Locale.ROOT) + " " + b.table + " (inbox " + namespace + ")";
    }

    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    // ---------------------------------------------------------------- owned transaction

    /**
     * Handles one message in a transaction of its own, borrowed from the data source: commits the mark and the
     * handler's writes together, or rolls both back. Never throws for a message-level problem.
     */
    public Outcome handle(Delivery delivery, TransactionalHandler handler) {
        Objects.requireNonNull(handler, "handler");
        return handleBatch(List.of(delivery), BatchHandler.eachOf(index -> handler))
                .get(0);
    }

    /**
     * Handles a batch in one transaction: one multi-row insert claims every key (in key order, so concurrent batches
     * do not deadlock on marks; {@code RETURNING} on PostgreSQL and MariaDB), {@code handler} gets every new delivery
     * at once on the same connection, and one commit ends it. Duplicates are answered without the handler. An outcome
     * that is not final rolls the transaction back and is kept; the rest of the batch runs again without that
     * delivery. A handler that throws: the batch is split in halves, each run on its own, until the delivery that
     * makes it throw runs alone and ends {@link Outcome#ofException}; the others commit. Returns one outcome per
     * delivery, in input order. A key repeated within the batch runs once; its later copies answer {@code DUPLICATE}
     * if the first was applied, else {@code IN_PROGRESS}. A lock-wait timeout on a mark ends the whole batch {@code
     * IN_PROGRESS}; a deadlock reruns the whole batch.
     */
    public List<Outcome> handleBatch(List<Delivery> deliveries, BatchHandler handler) {
        Objects.requireNonNull(handler, "handler");
        return run(deliveries, work -> runOwned(work, handler));
    }

    private List<Outcome> run(List<Delivery> deliveries, Runner runner) {
        long start = System.nanoTime();
        Outcome[] outcomes = new Outcome[deliveries.size()];
        Map<String, Pending> pending = group(deliveries, outcomes);
        settle(new ArrayList<>(pending.values()), runner);
        for (Pending p : pending.values()) {
            outcomes[p.firstIndex] = p.outcome;
            for (int i : p.laterIndexes) {
                outcomes[i] = p.outcome.isFinal()
                        ? Outcome.duplicate("duplicate of an earlier copy in the same batch")
                        : Outcome.inProgress("an earlier copy in the same batch did not finish: " + p.outcome, null);
            }
        }
        report(deliveries, outcomes, start);
        return List.of(outcomes);
    }

    /** One attempt at a batch's work: in an owned transaction, or under a savepoint of the caller's. */
    @FunctionalInterface
    private interface Runner {
        Attempt run(List<Pending> work);
    }

    /**
     * Runs {@code work} until each has its outcome: a delivery that does not end final is left out of the next run; a
     * deadlock reruns the rest; a commit the database refuses, or a handler that throws, splits the work in halves,
     * each run on its own, so that the one message at fault ends {@code FAILED} and the others commit.
     */
    private void settle(List<Pending> work, Runner runner) {
        for (int deadlocks = 0; !work.isEmpty(); ) {
            work.forEach(Pending::reset);
            Attempt attempt = runner.run(work);
            if (!attempt.unfinished().isEmpty()) {
                work.removeAll(attempt.unfinished());
            } else if (attempt.failure() == null) {
                return;
            } else if (attempt.failure() == RETRY) {
                if (deadlocks++ >= deadlockRetries) {
                    Outcome persisted = Outcome.inProgress("deadlock persisted after " + deadlocks + " attempts", null);
                    work.forEach(p -> p.outcome = persisted);
                    return;
                }
            } else if (attempt.failure() == SPLIT && work.size() > 1) {
                int half = work.size() / 2;
                settle(new ArrayList<>(work.subList(0, half)), runner);
                settle(new ArrayList<>(work.subList(half, work.size())), runner);
                return;
            } else {
                Outcome blamed = attempt.blamed();
                Outcome answer = attempt.failure() == SPLIT && blamed != null
                        ? blamed
                        : Objects.requireNonNull(attempt.failure());
                work.forEach(p -> p.outcome = answer);
                return;
            }
        }
    }

    /** Marks a deadlock to retry; never handed to a caller. */
    private static final Outcome RETRY = Outcome.inProgress("retry", null);

    /**
     * Marks an attempt that failed because of one of its messages, not known which (a commit the database refused, a
     * handler that threw): the work is split to find it. Never handed to a caller ({@link Attempt#blamed()} is).
     */
    private static final Outcome SPLIT = Outcome.failed("split", null);

    /**
     * How one attempt ended: applied (nothing unfinished, no failure), rolled back because some deliveries did not
     * end final ({@code unfinished}, whose outcomes are set; the others run again without them), or failed ({@code
     * failure}; for {@link #SPLIT}, {@code blamed} is the outcome of the one message at fault once it runs alone).
     */
    private record Attempt(
            List<Pending> unfinished,
            @Nullable Outcome failure,
            @Nullable Outcome blamed) {
        static final Attempt APPLIED = new Attempt(List.of(), null, null);

        static Attempt failed(Outcome failure) {
            return new Attempt(List.of(), failure, null);
        }

        static Attempt unfinished(List<Pending> unfinished) {
            return new Attempt(unfinished, null, null);
        }

        static Attempt split(Outcome blamed) {
            return new Attempt(List.of(), SPLIT, blamed);
        }

        boolean applied() {
            return unfinished.isEmpty() && failure == null;
        }
    }

    /** One attempt in a fresh transaction. */
    private Attempt runOwned(List<Pending> work, BatchHandler handler) {
        try (OwnedTransaction tx = OwnedTransaction.begin(dataSource, sql.dialect, false)) {
            Connection c = tx.connection();
            String owner = newOwner();
            @Nullable WatchedConnection watched = sql.dialect == Dialect.POSTGRESQL ? null : new WatchedConnection(c);
            Attempt processed = process(c, watched == null ? c : watched.connection(), work, owner, handler);
            if (!processed.applied()) {
                tx.rollback();
                return processed;
            }
            if (watched != null && !watched.provablyIntact() && !marksStillOurs(c, work, owner)) {
                tx.rollback();
                return Attempt.failed(RETRY);
            }
            OwnedTransaction.Commit commit = tx.commit();
            return switch (commit.fate()) {
                case COMMITTED -> Attempt.APPLIED;
                case REFUSED -> commit.retryable() ? Attempt.failed(RETRY) : refused(commit);
                case UNKNOWN -> Attempt.failed(failure(Objects.requireNonNull(commit.cause())));
            };
        } catch (SQLException e) {
            return Attempt.failed(failure(e));
        }
    }

    private static Attempt refused(OwnedTransaction.Commit commit) {
        SQLException cause = Objects.requireNonNull(commit.cause());
        return Attempt.split(
                SqlErrors.isTransactionAborted(cause)
                        ? abortedUnderTheHandler(cause)
                        : Outcome.failed(
                                "the database refused the commit (" + SqlErrors.describe(cause)
                                        + "): nothing was applied",
                                cause));
    }

    private static Outcome abortedUnderTheHandler(SQLException cause) {
        return Outcome.failed(
                "the handler answered a final outcome after one of its own statements failed, which aborted the"
                        + " transaction: nothing of it was committed; let the statement's exception propagate",
                cause);
    }

    /**
     * MariaDB/MySQL and H2 roll back a deadlock victim's whole transaction, marks included; a handler that catches
     * the deadlock and carries on writes into a new transaction that holds no mark. Counts the marks this
     * transaction inserted (one round trip), asked only when the handler's {@link WatchedConnection} saw something
     * that could have rolled it back; PostgreSQL needs no count, an aborted transaction is detected before the commit.
     */
    private boolean marksStillOurs(Connection c, List<Pending> work, String owner) throws SQLException {
        List<String> claimed =
                work.stream().filter(p -> p.claimed).map(p -> p.id).toList();
        return claimed.isEmpty() || sql.countOwned(c, claimed, owner) == claimed.size();
    }

    // ---------------------------------------------------------------- caller's transaction

    /**
     * Handles one message inside the caller's open transaction ({@code autoCommit} off) and leaves the commit to
     * the caller; see {@link #handleBatch(Connection, List, BatchHandler)}.
     *
     * @throws RetryLaterException when the database rolled back the caller's whole transaction (a deadlock on
     *     MariaDB/MySQL, a broken connection): the caller must roll back and have the message redelivered
     */
    public Outcome handle(Connection callerTransaction, Delivery delivery, TransactionalHandler handler) {
        Objects.requireNonNull(handler, "handler");
        return handleBatch(callerTransaction, List.of(delivery), BatchHandler.eachOf(index -> handler))
                .get(0);
    }

    /**
     * Handles a batch inside the caller's open transaction ({@code autoCommit} off) and leaves the commit to the
     * caller, as {@link #handleBatch(List, BatchHandler)} does in its own. Works under savepoints: an outcome that is
     * not final, or a handler exception, rolls back the marks and the handler's writes of that attempt and nothing
     * else of the caller's transaction. Never raises a unique violation (which would abort a PostgreSQL
     * transaction).
     *
     * @throws RetryLaterException when the database rolled back the caller's whole transaction (a deadlock on
     *     MariaDB/MySQL, a broken connection): the caller must roll back and have the messages redelivered
     */
    public List<Outcome> handleBatch(Connection callerTransaction, List<Delivery> deliveries, BatchHandler handler) {
        Objects.requireNonNull(callerTransaction, "callerTransaction");
        Objects.requireNonNull(handler, "handler");
        try {
            if (callerTransaction.getAutoCommit()) {
                throw new IllegalArgumentException("the connection is in autoCommit mode: call setAutoCommit(false)"
                        + " and pass the connection of an open transaction, or let the inbox own the transaction"
                        + " (handle(delivery, handler))");
            }
        } catch (SQLException e) {
            throw new StoreUnavailableException(description, "the caller's connection is unusable", e);
        }
        return run(deliveries, work -> runJoined(callerTransaction, work, handler));
    }

    /** One attempt under a savepoint of the caller's transaction. */
    private Attempt runJoined(Connection c, List<Pending> work, BatchHandler handler) {
        Savepoint savepoint;
        try {
            savepoint = c.setSavepoint();
        } catch (SQLException e) {
            throw callerTransactionLost(e);
        }
        try {
            Attempt processed = process(c, c, work, newOwner(), handler);
            if (processed.applied()) {
                release(c, savepoint);
            } else {
                rollBackTo(c, savepoint, processed);
            }
            return processed;
        } catch (SQLException e) {
            if (sql.dialect == Dialect.POSTGRESQL && "40001".equals(e.getSQLState())) {
                throw snapshotTooOld(e);
            }
            try {
                c.rollback(savepoint);
            } catch (SQLException lost) {
                e.addSuppressed(lost);
                throw callerTransactionLost(e);
            }
            return Attempt.failed(failure(e));
        }
    }

    /**
     * Rolls back an attempt that did not end final; when the connection is gone by then, the caller's transaction is
     * lost, and the attempt's own failures (a handler's exception that was the first sign of it) go with the report.
     */
    private void rollBackTo(Connection c, Savepoint savepoint, Attempt processed) {
        try {
            c.rollback(savepoint);
        } catch (SQLException lost) {
            Stream.concat(processed.unfinished().stream().map(p -> p.outcome), Stream.ofNullable(processed.blamed()))
                    .flatMap(outcome -> outcome.cause().stream())
                    .distinct()
                    .forEach(lost::addSuppressed);
            throw callerTransactionLost(lost);
        }
    }

    /**
     * Releases the handling's savepoint. On MariaDB/MySQL and H2 a savepoint that is gone proves that the database
     * rolled the caller's whole transaction back under the handler (a deadlock it caught), mark included. On any
     * database a connection lost at the release lost the caller's transaction: nothing was applied.
     */
    private void release(Connection c, Savepoint savepoint) {
        try {
            c.releaseSavepoint(savepoint);
        } catch (SQLException e) {
            if (sql.dialect != Dialect.POSTGRESQL || SqlErrors.isConnectionLost(e)) {
                throw callerTransactionLost(e);
            }
            // PostgreSQL: releasing only frees resources early; the savepoint ends with the transaction anyway.
        }
    }

    /**
     * PostgreSQL at REPEATABLE READ or SERIALIZABLE: a copy's mark committed after the caller's snapshot cannot be
     * read nor skipped in this transaction (a serialization failure); only a new transaction sees it.
     */
    static RetryLaterException snapshotTooOld(SQLException e) {
        return new RetryLaterException(
                "the caller's transaction runs at REPEATABLE READ or SERIALIZABLE and its snapshot predates a row"
                        + " another transaction committed for the same key (" + SqlErrors.describe(e) + "): roll it"
                        + " back and run it again (its new snapshot answers DUPLICATE), or run at READ COMMITTED",
                e);
    }

    private RetryLaterException callerTransactionLost(SQLException e) {
        return new RetryLaterException(
                description + ": the database ended the caller's transaction (" + SqlErrors.describe(e)
                        + "): roll it back and have the message redelivered",
                e);
    }

    // ---------------------------------------------------------------- the algorithm

    /** A distinct key of a batch and what became of it. */
    private static final class Pending {
        final IdempotencyKey key;
        final String id;
        final Delivery delivery;
        final int firstIndex;
        final List<Integer> laterIndexes = new ArrayList<>();
        Outcome outcome = RETRY;
        boolean claimed;
        boolean tookOver;

        Pending(IdempotencyKey key, String id, Delivery delivery, int firstIndex) {
            this.key = key;
            this.id = id;
            this.delivery = delivery;
            this.firstIndex = firstIndex;
        }

        @Nullable
        String fingerprint() {
            return delivery.fingerprint();
        }

        void reset() {
            outcome = RETRY;
            claimed = false;
            tookOver = false;
        }
    }

    /** Groups deliveries by key; invalid ones get their outcome at once. */
    private Map<String, Pending> group(List<Delivery> deliveries, Outcome[] outcomes) {
        Map<String, Pending> pending = new LinkedHashMap<>();
        for (int i = 0; i < deliveries.size(); i++) {
            Delivery d = Objects.requireNonNull(deliveries.get(i), "a delivery of the batch is null");
            IdempotencyKey key;
            try {
                key = IdempotencyKey.of(namespace, d.key());
            } catch (InvalidKeyException e) {
                outcomes[i] = Outcome.rejected(String.valueOf(e.getMessage()), e);
                continue;
            }
            Optional<String> badFingerprint = Fingerprint.problem(d.fingerprint());
            if (badFingerprint.isPresent()) {
                outcomes[i] = Outcome.rejected(badFingerprint.get());
                continue;
            }
            String id = key.storageId(); // built anew at each call: once per delivery
            Pending first = pending.get(id);
            if (first == null) {
                pending.put(id, new Pending(key, id, d, i));
            } else if (mismatch(d.fingerprint(), first.fingerprint())) {
                outcomes[i] = keyReused(key);
            } else {
                first.laterIndexes.add(i);
            }
        }
        return pending;
    }

    /**
     * Claims the keys of {@code work} on {@code c}, answers the duplicates, and hands the new ones to {@code handler}
     * at once, on {@code handlerConnection} (the same connection, maybe {@linkplain WatchedConnection watched}). Answers {@link Attempt#APPLIED} when every outcome is final and the transaction may commit; otherwise
     * the caller must roll back. Throws the SQLExceptions of its own statements, and a handler's deadlock, for the
     * caller to roll back and retry.
     */
    private Attempt process(
            Connection c, Connection handlerConnection, List<Pending> work, String owner, BatchHandler handler)
            throws SQLException {
        claim(c, work, owner);
        List<Pending> fresh = new ArrayList<>(work.size());
        for (Pending p : work) {
            if (p.claimed) {
                fresh.add(p);
            }
        }
        if (fresh.isEmpty()) {
            return Attempt.APPLIED;
        }
        List<Outcome> answers;
        try {
            answers = handler.handle(handlerConnection, contexts(fresh, owner));
        } catch (Exception e) {
            if (SqlErrors.isDeadlock(e)) {
                throw e instanceof SQLException s ? s : new SQLException("deadlock in the handler", "40001", e);
            }
            return blame(fresh, Outcome.ofException(e));
        }
        Optional<String> wrongAnswer = wrongAnswer(answers, fresh.size());
        if (wrongAnswer.isPresent()) {
            Outcome failed = Outcome.failed(wrongAnswer.get(), null);
            fresh.forEach(p -> p.outcome = failed);
            return Attempt.unfinished(fresh);
        }
        List<Pending> unfinished = new ArrayList<>();
        for (int i = 0; i < fresh.size(); i++) {
            Pending p = fresh.get(i);
            p.outcome = answers.get(i);
            if (!p.outcome.isFinal()) {
                unfinished.add(p);
            }
        }
        if (!unfinished.isEmpty()) {
            return Attempt.unfinished(unfinished);
        }
        return confirmCommittable(c, fresh, owner);
    }

    private static List<HandlingContext> contexts(List<Pending> fresh, String owner) {
        List<HandlingContext> contexts = new ArrayList<>(fresh.size());
        for (Pending p : fresh) {
            contexts.add(HandlingContext.of(p.key, p.delivery, p.firstIndex, owner, 0, p.tookOver));
        }
        return List.copyOf(contexts);
    }

    /** What is wrong with a batch handler's answer, if anything: a programming error, reported as such. */
    private static Optional<String> wrongAnswer(@Nullable List<Outcome> answers, int expected) {
        if (answers == null) {
            return Optional.of("programming error: the batch handler answered null for " + expected
                    + " deliveries; answer one Outcome per context, in order: nothing was committed");
        }
        if (answers.size() != expected) {
            return Optional.of("programming error: the batch handler answered " + answers.size() + " outcomes for "
                    + expected + " deliveries; answer one Outcome per context, in order: nothing was committed");
        }
        for (int i = 0; i < expected; i++) {
            if (answers.get(i) == null) {
                return Optional.of("programming error: the batch handler answered null at position " + i
                        + "; answer one Outcome per context, in order: nothing was committed");
            }
        }
        return Optional.empty();
    }

    /**
     * The delivery at fault when only one ran, else a split of the batch to find it: the others must not pay for
     * it.
     */
    private static Attempt blame(List<Pending> fresh, Outcome outcome) {
        if (fresh.size() == 1) {
            fresh.get(0).outcome = outcome;
            return Attempt.unfinished(fresh);
        }
        return Attempt.split(outcome);
    }

    /** Inserts the marks of {@code work} in key order and sets each one's claim or outcome. */
    private void claim(Connection c, List<Pending> work, String owner) throws SQLException {
        long now = databaseClock ? sql.databaseNowMillis(c) : clock.millis();
        long expiresAt = now + retention.toMillis();
        List<Pending> sorted = new ArrayList<>(work);
        if (sorted.size() > 1) {
            sorted.sort((a, b) -> Sql.ID_ORDER.compare(a.id, b.id));
        }
        List<String> ids = new ArrayList<>(sorted.size());
        Map<String, @Nullable String> fingerprints = new HashMap<>();
        for (Pending p : sorted) {
            ids.add(p.id);
            fingerprints.put(p.id, p.fingerprint());
        }
        Sql.Marks marks = sql.insertMarks(c, ids, fingerprints, owner, now, expiresAt, lockWaitSeconds);
        Set<String> inserted = marks.inserted();
        Map<String, Row> existing = marks.found();
        List<String> unread = new ArrayList<>();
        for (String id : ids) {
            if (!inserted.contains(id) && !existing.containsKey(id)) {
                unread.add(id);
            }
        }
        if (!unread.isEmpty()) {
            existing = new HashMap<>(existing);
            existing.putAll(sql.selectMany(c, unread, Sql.Lock.SHARED));
        }
        for (Pending p : sorted) {
            if (inserted.contains(p.id)) {
                p.claimed = true;
                continue;
            }
            Row row = existing.get(p.id);
            if (row == null) {
                p.outcome = Outcome.inProgress("the key's mark was removed while it was read; retry", null);
            } else if (!row.live(now)) {
                p.claimed = sql.replaceExpired(c, p.id, owner, now, expiresAt, p.fingerprint(), lockWaitSeconds);
                p.tookOver = p.claimed && !row.done();
                if (!p.claimed) {
                    p.outcome = Outcome.inProgress("another consumer renewed the key's expired mark; retry", null);
                }
            } else if (mismatch(p.fingerprint(), row.fingerprint())) {
                p.outcome = keyReused(p.key);
            } else if (row.done()) {
                long at = Objects.requireNonNullElse(row.completedAt(), now);
                p.outcome = Outcome.duplicate("already processed at " + Timestamps.iso(at), row.result());
            } else {
                p.outcome = Outcome.inProgress(
                        "a lease-mode claim holds the key until " + Timestamps.iso(row.expiresAt()), null);
            }
        }
    }

    /**
     * Stores the handler's results, and on PostgreSQL makes sure the transaction can still commit: a handler that
     * catches the failure of one of its own statements and answers final outcomes leaves an aborted transaction,
     * whose commit PostgreSQL silently turns into a rollback. Such a delivery ends {@code FAILED}, never {@code
     * PROCESSED} for an effect that was not committed.
     */
    private Attempt confirmCommittable(Connection c, List<Pending> fresh, String owner) throws SQLException {
        try {
            boolean stored = false;
            for (Pending p : fresh) {
                byte[] result = p.outcome.result().orElse(null);
                if (result != null) {
                    sql.storeResult(c, p.id, owner, result);
                    stored = true;
                }
            }
            if (!stored && sql.dialect == Dialect.POSTGRESQL) {
                sql.probe(c);
            }
            return Attempt.APPLIED;
        } catch (SQLException e) {
            if (!SqlErrors.isTransactionAborted(e)) {
                throw e;
            }
            return blame(fresh, abortedUnderTheHandler(e));
        }
    }
    /** The outcome for an attempt that failed with {@code e}; {@link #RETRY} for a deadlock. */
    private Outcome failure(SQLException e) {
        if (SqlErrors.isMissingTable(e)) {
            throw SqlErrors.missingTable(e, description, sql.table, Schema.ddlResource(sql.dialect));
        }
        if (SqlErrors.isDeadlock(e)) {
            return RETRY;
        }
        if (SqlErrors.isLockWait(e)) {
            return Outcome.inProgress(
                    "another copy of the message holds the key in an uncommitted transaction for more than "
                            + lockWaitSeconds + " s",
                    null);
        }
        return Outcome.inProgress(
                description + " unavailable or the commit's fate is unknown (" + SqlErrors.describe(e)
                        + "); the redelivery will tell",
                null);
    }

    // ---------------------------------------------------------------- purge and helpers

    /** Deletes expired marks and completions in small batches; returns how many. See {@link JdbcStore#purgeExpired}. */
    public int purgeExpired() {
        return Purge.run(
                dataSource,
                sql,
                purgeBatchSize,
                c -> databaseClock ? sql.databaseNowMillis(c) : clock.millis(),
                description);
    }

    /** Runs {@link #purgeExpired()} every {@code interval} on the caller's scheduler; cancel the future to stop. */
    public ScheduledFuture<?> schedulePurge(ScheduledExecutorService scheduler, Duration interval) {
        return Purge.schedule(scheduler, interval, this::purgeExpired, description);
    }

    public String namespace() {
        return namespace;
    }

    public String describe() {
        return description;
    }

    private void report(List<Delivery> deliveries, Outcome[] outcomes, long start) {
        if (!reportOutcomes) {
            return;
        }
        Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
        for (int i = 0; i < outcomes.length; i++) {
            String logId;
            try {
                logId = IdempotencyKey.of(namespace, deliveries.get(i).key()).logId();
            } catch (InvalidKeyException e) {
                logId = "<invalid>";
            }
            listener.onEvent(IdempotencyEvent.builder(IdempotencyEvent.Type.HANDLED, namespace)
                    .guardKind(IdempotencyEvent.GuardKind.INBOX)
                    .source(description)
                    .keyLogId(logId)
                    .outcome(outcomes[i])
                    .elapsed(elapsed)
                    .build());
        }
    }

    private static Outcome keyReused(IdempotencyKey key) {
        return Outcome.rejected("key " + key.logId()
                + " was used before with a different payload: a producer reuses keys; give each message its own key");
    }

    private static boolean mismatch(@Nullable String requested, @Nullable String stored) {
        return requested != null && stored != null && !requested.equals(stored);
    }

    private static String newOwner() {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        return HexFormat.of().toHexDigits(r.nextLong()) + HexFormat.of().toHexDigits(r.nextLong());
    }

    /** Builds a {@link JdbcInbox}. Each setter checks its value at once; {@link #build()} the rest. */
    public static final class Builder extends JdbcBuilder<Builder> {
        private static final Duration LONGEST_LOCK_WAIT = Duration.ofDays(1);

        private @Nullable String namespace;
        private Duration retention = Duration.ofDays(7);
        private Duration lockWait = Duration.ofSeconds(10);
        private int deadlockRetries = 3;
        private int purgeBatchSize = Purge.DEFAULT_BATCH_SIZE;
        private IdempotencyListener listener = IdempotencyListener.NONE;

        private Builder(DataSource dataSource) {
            super(dataSource, Schema.DEFAULT_TABLE);
        }

        /** Required: the handler's name, e.g. the consumer group. See {@link IdempotencyKey}. */
        public Builder namespace(String namespace) {
            this.namespace = IdempotencyKey.validateNamespace(namespace);
            return this;
        }

        /** How long a mark is kept; a copy arriving later runs again. Default 7 days; 1 ms to 36,500 days. */
        public Builder retention(Duration retention) {
            this.retention = LeaseBounds.setting("retention", retention);
            return this;
        }

        /**
         * How long a copy waits for an uncommitted copy of the same key before answering {@code IN_PROGRESS}.
         * Whole seconds (rounded up; JDBC query timeouts count seconds). Default 10 s; at most 1 day.
         */
        public Builder lockWait(Duration lockWait) {
            if (lockWait == null || lockWait.isNegative() || lockWait.isZero()) {
                throw new ConfigurationException("lockWait must be a positive duration, got " + lockWait);
            }
            if (lockWait.compareTo(LONGEST_LOCK_WAIT) > 0) {
                throw new ConfigurationException("lockWait must be at most 1 day, got " + lockWait
                        + ": a copy waits that long for an uncommitted twin before answering IN_PROGRESS");
            }
            this.lockWait = lockWait;
            return this;
        }

        /** How many times a transaction that hit a deadlock is run again. Default 3; 0 to 20. */
        public Builder deadlockRetries(int retries) {
            if (retries < 0 || retries > 20) {
                throw new ConfigurationException("deadlockRetries must be 0 to 20, got " + retries);
            }
            this.deadlockRetries = retries;
            return this;
        }

        /** Rows deleted per purge transaction. Default 500; 1 to 10,000. */
        public Builder purgeBatchSize(int rows) {
            this.purgeBatchSize = Purge.checkBatchSize(rows);
            return this;
        }

        /** Called for every outcome; its failures never change one. Default none. */
        public Builder listener(IdempotencyListener listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        public JdbcInbox build() {
            if (namespace == null) {
                throw new ConfigurationException(
                        "a JdbcInbox needs a namespace: call .namespace(\"your-consumer-group\") on the builder");
            }
            String store = "jdbc " + table;
            Dialect d = resolveDialect(store);
            if (createTableIfMissing) {
                Schema.create(dataSource, d, table, store);
            }
            return new JdbcInbox(this, d, namespace);
        }
    }
}
