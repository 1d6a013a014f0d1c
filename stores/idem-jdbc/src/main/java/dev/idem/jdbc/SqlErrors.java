package dev.idem.jdbc;

import dev.idem.ConfigurationException;
import dev.idem.IdempotencyException;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.FailureClassifier;
import java.sql.SQLException;
import java.sql.SQLTimeoutException;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/** Sorts the SQLExceptions of the three databases by what the caller must do. */
final class SqlErrors {
    private SqlErrors() {}

    /** MariaDB/MySQL: lock wait timeout, max_statement_time, max_execution_time; H2: lock timeout. */
    private static final Set<Integer> LOCK_WAIT_CODES = Set.of(1205, 1969, 3024, 50200);
    /** H2: table or view not found (three variants), sequence not found; MariaDB/MySQL: table doesn't exist. */
    private static final Set<Integer> MISSING_OBJECT_CODES = Set.of(42102, 42103, 42104, 90036, 1146);

    /** A deadlock or a serialization failure: the transaction was rolled back and may simply be run again. */
    static boolean isDeadlock(Throwable t) {
        SQLException e = sqlException(t);
        return e != null && (state(e).startsWith("40") || e.getErrorCode() == 1213 || e.getErrorCode() == 40001);
    }

    /**
     * A serialization failure (SQLState 40001): on PostgreSQL a repeatable read or serializable transaction changing a
     * row that another transaction changed after its snapshot (read committed never raises it for an UPDATE).
     */
    static boolean isSerializationFailure(Throwable t) {
        SQLException e = sqlException(t);
        return e != null && "40001".equals(state(e));
    }

    /** A lock wait (or our statement timeout) ran out: the row is held by a transaction that has not finished. */
    static boolean isLockWait(Throwable t) {
        SQLException e = sqlException(t);
        return e != null
                && (e instanceof SQLTimeoutException
                        || "55P03".equals(state(e))
                        || "57014".equals(state(e))
                        || "HYT00".equals(state(e))
                        || "70100".equals(state(e))
                        || LOCK_WAIT_CODES.contains(e.getErrorCode()));
    }

    /** PostgreSQL: "current transaction is aborted, commands ignored until end of transaction block". */
    static boolean isTransactionAborted(Throwable t) {
        SQLException e = sqlException(t);
        return e != null && "25P02".equals(state(e));
    }

    /** A unique key already holds the value (PostgreSQL and H2: SQLState 23505; MariaDB/MySQL: error 1062). */
    static boolean isDuplicateKey(SQLException e) {
        return "23505".equals(e.getSQLState()) || e.getErrorCode() == 1062;
    }

    /** The connection broke or the database cannot be reached: {@link FailureClassifier#isLostConnection}, causes included. */
    static boolean isConnectionLost(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (FailureClassifier.isLostConnection(c)) {
                return true;
            }
        }
        return false;
    }

    static boolean isMissingTable(Throwable t) {
        SQLException e = sqlException(t);
        return e != null
                && ("42P01".equals(state(e))
                        || "42S02".equals(state(e))
                        || MISSING_OBJECT_CODES.contains(e.getErrorCode()));
    }

    /** The exception a store operation throws for {@code e}: configuration if the table is missing, else retry. */
    static IdempotencyException translate(SQLException e, String store, String table, String ddlResource, String what) {
        if (isMissingTable(e)) {
            return missingTable(e, store, table, ddlResource);
        }
        if (isLockWait(e)) {
            return new StoreUnavailableException(
                    store,
                    what + " found the key's row locked by another transaction (a copy's claim, a handler's"
                            + " transaction holding its completion, or one whose commit never came back), and did not"
                            + " wait longer (" + e.getMessage() + ")",
                    e);
        }
        return new StoreUnavailableException(
                store, what + " failed (SQLState " + e.getSQLState() + "): " + e.getMessage(), e);
    }

    static ConfigurationException missingTable(SQLException e, String store, String table, String ddlResource) {
        return new ConfigurationException(
                store + ": table " + table + " or sequence " + table
                        + "_fencing does not exist (" + e.getMessage() + "): create them with the DDL in the resource "
                        + ddlResource + " (also in the README, section JDBC), or set createTableIfMissing(true)",
                e);
    }

    static String describe(Throwable t) {
        SQLException e = sqlException(t);
        return e == null
                ? t.getClass().getName() + ": " + t.getMessage()
                : "SQLState " + e.getSQLState() + ", " + e.getMessage();
    }

    private static @Nullable SQLException sqlException(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof SQLException e) {
                return e;
            }
        }
        return null;
    }

    private static String state(SQLException e) {
        return e.getSQLState() == null ? "" : e.getSQLState();
    }
}
