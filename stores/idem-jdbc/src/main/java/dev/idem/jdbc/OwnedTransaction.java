package dev.idem.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLTimeoutException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.util.Optional;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * The one path on which every JDBC entry point (inbox, lease store, business guards' own transaction, purge) owns a
 * transaction on a borrowed connection. Use it with try-with-resources:
 *
 * <ul>
 *   <li>{@link #close()} rolls back whatever was not committed <em>before</em> it restores auto-commit, whatever
 *       ended the block (an exception or an {@link Error}): restoring auto-commit on an open transaction would commit
 *       it;
 *   <li>{@link #commit()} first checks that the transaction can still commit (PostgreSQL turns the commit of an
 *       aborted transaction into a silent rollback; MariaDB/MySQL and H2 roll back a deadlock victim's whole
 *       transaction, which a caught exception hides, see {@link #guardAgainstSilentRollback()}), then answers how the
 *       commit ended: committed, refused (rolled back, with the database's reason) or of unknown fate (the connection
 *       broke: the redelivery will tell);
 *   <li>with {@code readCommitted}, every transaction of the borrowing runs at READ COMMITTED on MariaDB/MySQL (no gap
 *       locks), not only the first;
 *   <li>on a connection the pool hands out in auto-commit, the commit is {@code setAutoCommit(true)}, which commits
 *       the transaction (JDBC) and restores the pool's mode in one round trip instead of two on MariaDB/MySQL;
 *       {@link #connection()} switches auto-commit off again for the borrowing's next transaction.
 * </ul>
 *
 * Not thread-safe: one per borrowing.
 */
final class OwnedTransaction implements AutoCloseable {
    private static final String GUARD_SAVEPOINT = "idem_open";

    /** How a commit ended. */
    enum Fate {
        COMMITTED,
        /** The database refused the commit and rolled the transaction back: {@link Commit#cause()} says why. */
        REFUSED,
        /** The connection broke while committing: the transaction may or may not have committed. */
        UNKNOWN
    }

    /** A commit's fate and, unless it committed, its cause. */
    record Commit(Fate fate, @Nullable SQLException cause) {
        static final Commit COMMITTED = new Commit(Fate.COMMITTED, null);

        /** True when the refusal was a deadlock or a serialization failure: running the transaction again may work. */
        boolean retryable() {
            return fate == Fate.REFUSED && cause != null && SqlErrors.isDeadlock(cause);
        }
    }

    private final Connection connection;
    private final Dialect dialect;
    private final boolean restoreAutoCommit;
    private final boolean readCommitted;
    private boolean isolationSet;
    /** True between a commit that restored auto-commit and the next transaction's {@link #connection()}. */
    private boolean autoCommitOn;

    private @Nullable Savepoint guard;
    /** Set when the driver threw an unchecked exception: the connection is aborted, not returned as it is. */
    private boolean driverFailed;

    private OwnedTransaction(Connection connection, Dialect dialect, boolean restoreAutoCommit, boolean readCommitted) {
        this.connection = connection;
        this.dialect = dialect;
        this.restoreAutoCommit = restoreAutoCommit;
        this.readCommitted = readCommitted && dialect.mysqlFamily();
    }

    /** Borrows a connection and opens a transaction on it. */
    static OwnedTransaction begin(DataSource dataSource, Dialect dialect, boolean readCommitted) throws SQLException {
        Connection c = dataSource.getConnection();
        try {
            boolean autoCommit = c.getAutoCommit();
            if (autoCommit) {
                c.setAutoCommit(false);
            } else {
                c.rollback(); // a pool may hand out a connection with a transaction left open: not ours to commit
            }
            return new OwnedTransaction(c, dialect, autoCommit, readCommitted);
        } catch (Throwable t) {
            closeAfter(c, t);
            throw t;
        }
    }

    /**
     * The transaction's connection: not to be committed, rolled back or closed by the caller. After {@link
     * #commit()} or {@link #rollback()}, call it again before the next transaction's first statement.
     */
    Connection connection() throws SQLException {
        if (autoCommitOn) {
            connection.setAutoCommit(false);
            autoCommitOn = false;
        }
        if (readCommitted && !isolationSet) {
            try (Statement s = connection.createStatement()) {
                s.execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED");
            }
            isolationSet = true;
        }
        return connection;
    }

    /**
     * On MariaDB/MySQL and H2, sets a savepoint that {@link #commit()} releases first: a deadlock rolls back the
     * whole transaction and drops its savepoints, so a release that fails proves that what was written before the
     * work's caught deadlock is gone. Two round trips; PostgreSQL needs none (an aborted transaction is detected).
     */
    void guardAgainstSilentRollback() throws SQLException {
        if (dialect != Dialect.POSTGRESQL) {
            guard = connection().setSavepoint(GUARD_SAVEPOINT);
        }
    }

    /**
     * Commits, unless the transaction can no longer commit; never throws for the commit itself, not even for a driver's
     * unchecked exception (its fate is then unknown, and the connection is aborted on {@link #close()}).
     */
    Commit commit() {
        try {
            Optional<SQLException> lost = lostBeforeCommit();
            if (lost.isPresent()) {
                rollback();
                return new Commit(Fate.REFUSED, lost.get());
            }
            if (restoreAutoCommit) {
                connection.setAutoCommit(true); // commits the transaction
                autoCommitOn = true;
            } else {
                connection.commit();
            }
            ended();
            return Commit.COMMITTED;
        } catch (SQLException e) {
            ended();
            return new Commit(isFateUnknown(e) ? Fate.UNKNOWN : Fate.REFUSED, e);
        } catch (RuntimeException e) {
            ended();
            driverFailed = true;
            return new Commit(
                    Fate.UNKNOWN,
                    new SQLException(
                            "the JDBC driver failed while committing (" + e + "): the transaction may or may not have"
                                    + " committed; the connection is aborted",
                            "08000",
                            e));
        }
    }

    /** Why the transaction can no longer commit, if so: aborted (PostgreSQL) or rolled back under the work. */
    private Optional<SQLException> lostBeforeCommit() throws SQLException {
        if (dialect == Dialect.POSTGRESQL) {
            if (isAborted()) {
                return Optional.of(new SQLException(
                        "the transaction was aborted by a failed statement that the work caught and carried on after",
                        "25P02"));
            }
            return Optional.empty();
        }
        Savepoint sp = guard;
        if (sp != null) {
            guard = null;
            try {
                connection.releaseSavepoint(sp);
            } catch (SQLException e) {
                if (SqlErrors.isConnectionLost(e)) {
                    throw e;
                }
                SQLException lost = new SQLException(
                        "the database rolled the transaction back under the work (a deadlock it caught and carried"
                                + " on after?): what it wrote before is gone",
                        "40001",
                        e);
                return Optional.of(lost);
            }
        }
        return Optional.empty();
    }

    /**
     * PostgreSQL: true when the transaction is aborted. pgjdbc's own transaction state answers without a round trip;
     * another driver's, the cheapest statement.
     */
    boolean isAborted() throws SQLException {
        Optional<Boolean> aborted = PgTransactionState.isAborted(connection);
        if (aborted.isPresent()) {
            return aborted.get();
        }
        try (Statement s = connection.createStatement()) {
            s.execute("SELECT 1");
            return false;
        } catch (SQLException e) {
            if (SqlErrors.isTransactionAborted(e)) {
                return true;
            }
            throw e;
        }
    }

    /** Rolls back; the borrowing may run another transaction after it. */
    void rollback() throws SQLException {
        guard = null;
        if (autoCommitOn) {
            return; // committed, nothing open
        }
        try {
            connection.rollback();
        } finally {
            ended();
        }
    }

    private void ended() {
        isolationSet = false;
    }

    /**
     * Rolls back what is not committed, then restores auto-commit, then returns the connection; never throws. A
     * connection whose rollback failed is closed without touching auto-commit: the database ends its transaction
     * when the broken connection goes.
     */
    @Override
    public void close() {
        try {
            if (!autoCommitOn && !driverFailed) {
                connection.rollback();
                if (restoreAutoCommit) {
                    connection.setAutoCommit(true);
                }
            }
        } catch (SQLException e) {
            // Broken: the pool discards it (or the driver closes it); the database rolls back on its side.
        } catch (RuntimeException e) {
            driverFailed = true;
        }
        if (driverFailed) {
            abort();
        }
        try {
            connection.close();
        } catch (SQLException | RuntimeException e) {
            // Nothing left to release on our side.
        }
    }

    /**
     * Closes the physical connection of a driver that failed with an unchecked exception: its protocol state is
     * unknown (a reply read one behind answers the next statement), so it must not serve another borrowing.
     */
    private void abort() {
        try {
            connection.abort(Runnable::run);
        } catch (SQLException | RuntimeException e) {
            // Nothing more to do: the pool may still hand it out, and its next statement fails.
        }
    }

    private static void closeAfter(Connection c, Throwable failure) {
        try {
            c.close();
        } catch (SQLException e) {
            failure.addSuppressed(e);
        }
    }

    /** A commit that failed this way may have committed: the connection broke, or the driver stopped waiting. */
    static boolean isFateUnknown(SQLException e) {
        return SqlErrors.isConnectionLost(e) || e instanceof SQLTimeoutException;
    }
}
