package dev.idem.jdbc;

import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;

/**
 * How long one statement may wait for a lock another transaction holds; past it the statement fails as {@link
 * SqlErrors#isLockWait} tells. Open it on the statement before executing it and close it after (try-with-resources).
 *
 * <p>PostgreSQL's driver carries a query timeout out with a {@code java.util.Timer} task per execution, whose shared
 * thread wakes for each and contends with the caller for the timer's lock: much of the single inbox's JVM time over a
 * hand-written dedup insert (docs/benchmarks.md, session 20). There the {@link StatementWatcher} cancels the statement
 * instead, as the driver's timer would. The other drivers keep the query timeout: MariaDB's is the server's {@code
 * max_statement_time}, H2's its own check.
 */
interface LockWait extends AutoCloseable {
    LockWait UNWATCHED = () -> {};

    static LockWait bound(Dialect dialect, Statement statement, int seconds) throws SQLException {
        return bound(StatementWatcher.SHARED, dialect, statement, Duration.ofSeconds(seconds));
    }

    /** A bound of {@code limit}; a driver's query timeout counts whole seconds, rounded up. */
    static LockWait bound(Dialect dialect, Statement statement, Duration limit) throws SQLException {
        return bound(StatementWatcher.SHARED, dialect, statement, limit);
    }

    /** With the driver's query timeout where {@code watcher} cannot watch (it could not start its thread). */
    static LockWait bound(StatementWatcher watcher, Dialect dialect, Statement statement, Duration limit)
            throws SQLException {
        if (dialect == Dialect.POSTGRESQL) {
            StatementWatcher.Watch watch = watcher.watch(statement, limit);
            if (watch != null) {
                return watch;
            }
        }
        statement.setQueryTimeout((int) Math.max(1, (limit.toMillis() + 999) / 1000));
        return UNWATCHED;
    }

    @Override
    void close();
}
