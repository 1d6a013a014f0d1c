package dev.idem.jdbc;

import dev.idem.ConfigurationException;
import dev.idem.DeadLetterException;
import dev.idem.Outcome;
import dev.idem.StoreUnavailableException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Objects;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Runs guarded work in a transaction of its own: commits when the outcome is final ({@code PROCESSED}, {@code
 * DUPLICATE}), rolls back otherwise. The way to run the business guards when no caller's transaction is open, alone
 * or several in one transaction, e.g. create-or-apply:
 *
 * <pre>{@code
 * OwnTransaction tx = OwnTransaction.of(dataSource);
 * Outcome o = tx.run(c -> event.isCreate()
 *         ? newOrders.insertOnce(c, row, TransactionalHandler.NONE)
 *         : orders.apply(c, event.orderId(), event.type(), Assignments.of(), charge));
 * }</pre>
 *
 * <p>Never throws for a message-level problem, and never answers {@code PROCESSED} for work that was not committed:
 *
 * <ul>
 *   <li>an exception from the work rolls back and ends {@code FAILED} ({@code REJECTED} for a {@link
 *       DeadLetterException}); an {@link Error} rolls back and propagates;
 *   <li>a deadlock or a serialization failure (also one the work caught: MariaDB/MySQL and H2 roll back a deadlock
 *       victim's whole transaction, PostgreSQL aborts it) runs the work again in a new transaction, up to {@link
 *       Builder#deadlockRetries(int)} times, then ends {@code IN_PROGRESS};
 *   <li>a final outcome after a failed statement the work caught (PostgreSQL aborts the transaction) ends {@code
 *       FAILED}, as does a commit the database refuses (a deferred constraint, a trigger);
 *   <li>a database that cannot be reached, or a commit whose fate is unknown, ends {@code IN_PROGRESS}: the
 *       redelivery finds the guarded row applied or not.
 * </ul>
 *
 * On MariaDB/MySQL and H2, which roll a deadlock victim's whole transaction back (a caught exception hides it), the
 * work's connection is watched ({@link WatchedConnection}): when nothing went by that could have ended the
 * transaction, it commits as it is. When something did (the work caught a failed statement, took a driver object out
 * of reach, or ran SQL that may end a transaction), the transaction is rolled back and the work runs once more, and
 * from then on this instance sets a savepoint before each work that proves, before the commit, that the database did
 * not roll the work back under it (two round trips more per transaction). Immutable configuration, thread-safe. Does
 * not own the data source.
 */
public final class OwnTransaction {
    private final DataSource dataSource;
    private final int deadlockRetries;
    private volatile @Nullable Dialect dialect;
    /** Set once a work was seen doing what the watch cannot vouch for: each transaction then proves itself. */
    private volatile boolean savepointFirst;

    private OwnTransaction(Builder b) {
        this.dataSource = b.dataSource;
        this.deadlockRetries = b.deadlockRetries;
        this.dialect = b.dialect;
    }

    /**
     * Transactions on {@code dataSource}, with the defaults. Build it once and reuse it (it is thread-safe): each
     * instance detects the database on its first transaction.
     */
    public static OwnTransaction of(DataSource dataSource) {
        return builder(dataSource).build();
    }

    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    /** Runs {@code work} in a new transaction, see the class comment. */
    public Outcome run(TransactionalHandler work) {
        Objects.requireNonNull(work, "work");
        for (int attempt = 1; ; attempt++) {
            Outcome outcome = once(work);
            if (outcome != RETRY) {
                return outcome;
            }
            if (attempt > deadlockRetries) {
                return Outcome.inProgress(
                        "deadlock or serialization failure persisted after " + attempt + " attempts", null);
            }
        }
    }

    /** The connection this thread's work runs on, while it runs. */
    private static final ThreadLocal<Connection> RUNNING = new ThreadLocal<>();

    /**
     * True when {@code connection} is the one an {@code OwnTransaction} handed to the work running on this thread: a
     * transaction that ends (commit or rollback) before the connection is closed, each attempt on a connection of its
     * own.
     */
    static boolean runs(Connection connection) {
        return RUNNING.get() == connection;
    }

    /** Marks a transaction to run again; never handed to a caller. */
    private static final Outcome RETRY = Outcome.inProgress("retry", null);

    /** Marks a watched transaction rolled back because the watch could not vouch for it; never handed to a caller. */
    private static final Outcome UNSURE = Outcome.inProgress("unsure", null);

    private Outcome once(TransactionalHandler work) {
        Dialect d;
        try {
            d = dialect();
        } catch (StoreUnavailableException e) {
            return unavailable(e);
        }
        boolean watch = d != Dialect.POSTGRESQL && !savepointFirst;
        Outcome outcome = attempt(work, d, watch);
        if (outcome == UNSURE) {
            savepointFirst = true;
            return attempt(work, d, false);
        }
        return outcome;
    }

    /**
     * One transaction; with {@code watch}, the work's connection watched instead of a savepoint set first, answering
     * {@link #UNSURE} (rolled back) when the watch cannot vouch that the transaction is whole.
     */
    private Outcome attempt(TransactionalHandler work, Dialect d, boolean watch) {
        try (OwnedTransaction tx = OwnedTransaction.begin(dataSource, d, false)) {
            Connection c = tx.connection();
            @Nullable WatchedConnection watched = watch ? new WatchedConnection(c) : null;
            if (!watch) {
                tx.guardAgainstSilentRollback();
            }
            Outcome outcome;
            Connection handed = watched == null ? c : watched.connection();
            RUNNING.set(handed);
            try {
                outcome = Objects.requireNonNull(work.handle(handed), "the work must return an Outcome, not null");
            } catch (Exception e) {
                if (SqlErrors.isDeadlock(e)) {
                    return RETRY;
                }
                return SqlErrors.isConnectionLost(e) ? unavailable(e) : Outcome.ofException(e);
            } finally {
                RUNNING.remove();
            }
            if (!outcome.isFinal()) {
                return outcome;
            }
            if (watched != null && !watched.provablyIntact()) {
                tx.rollback();
                return UNSURE;
            }
            OwnedTransaction.Commit commit = tx.commit();
            SQLException cause = commit.cause();
            return switch (commit.fate()) {
                case COMMITTED -> outcome;
                case REFUSED -> commit.retryable() ? RETRY : refused(outcome, Objects.requireNonNull(cause));
                case UNKNOWN -> unavailable(Objects.requireNonNull(cause));
            };
        } catch (SQLException e) {
            return SqlErrors.isDeadlock(e) ? RETRY : unavailable(e);
        }
    }

    private static Outcome refused(Outcome answered, SQLException cause) {
        if (SqlErrors.isTransactionAborted(cause)) {
            return Outcome.failed(
                    "the work answered " + answered.type() + " after one of its own statements failed, which aborted"
                            + " the transaction: nothing of it was committed; let the statement's exception propagate",
                    cause);
        }
        return Outcome.failed(
                "the database refused the commit (" + SqlErrors.describe(cause) + "): nothing was applied", cause);
    }

    private static Outcome unavailable(Exception e) {
        return Outcome.inProgress(
                "database unavailable, or the commit's fate is unknown (" + SqlErrors.describe(e)
                        + "); the redelivery will tell",
                null);
    }

    private Dialect dialect() {
        Dialect d = dialect;
        if (d == null) {
            d = Schema.detect(dataSource, "own transaction");
            dialect = d;
        }
        return d;
    }

    /**
     * Refuses a connection in auto-commit mode: the guarded change would commit alone, before its side effect ran,
     * and a side effect that then failed would never run again (the redelivery answers {@code DUPLICATE}).
     */
    static void requireTransaction(Connection c, String guard) throws SQLException {
        if (c.getAutoCommit()) {
            throw new IllegalArgumentException(guard + ": the connection is in autoCommit mode, so the guarded change"
                    + " would commit alone before its side effect: call setAutoCommit(false) and pass the connection"
                    + " of an open transaction, or run the guard in OwnTransaction.run(...)");
        }
    }

    /** Builds an {@link OwnTransaction}. Each setter checks its value at once. */
    public static final class Builder {
        private final DataSource dataSource;
        private int deadlockRetries = 3;
        private @Nullable Dialect dialect;

        private Builder(DataSource dataSource) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        }

        /** How many times a transaction that hit a deadlock or serialization failure runs again. Default 3; 0 to 20. */
        public Builder deadlockRetries(int retries) {
            if (retries < 0 || retries > 20) {
                throw new ConfigurationException("deadlockRetries must be 0 to 20, got " + retries);
            }
            this.deadlockRetries = retries;
            return this;
        }

        /** The SQL dialect. Default: detected from the first connection. */
        public Builder dialect(Dialect dialect) {
            this.dialect = Objects.requireNonNull(dialect, "dialect");
            return this;
        }

        public OwnTransaction build() {
            return new OwnTransaction(this);
        }
    }
}
