package dev.idem.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * Single statements on a borrowed connection in auto-commit: each commits at once, so no lock outlives a statement
 * and each read sees the latest committed rows. A connection the pool hands out with auto-commit off is rolled back
 * (nothing of ours is in it) before auto-commit is switched on, which would commit an open transaction, and is
 * switched back after.
 */
final class AutoCommit {
    private AutoCommit() {}

    @FunctionalInterface
    interface Work<T> {
        T run(Connection c) throws SQLException;
    }

    /**
     * As {@link #run}, except that a connection handed out with auto-commit off is not switched: the work runs in a
     * transaction of its own, committed when it returns (rolled back when it throws). For MariaDB/MySQL, whose driver
     * sends each switch of auto-commit to the server (two round trips per call) while the commit is one, and only for
     * work whose reads come after its writes or see nothing a race could hide: InnoDB takes a repeatable-read
     * snapshot at the first read of a table, so such a read still sees the latest committed rows.
     */
    static <T> T runCommittingInPlace(DataSource dataSource, Work<T> work) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            if (c.getAutoCommit()) {
                return work.run(c);
            }
            c.rollback();
            boolean committed = false;
            try {
                T result = work.run(c);
                c.commit();
                committed = true;
                return result;
            } finally {
                if (!committed) {
                    rollbackQuietly(c);
                }
            }
        }
    }

    private static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException e) {
            // The connection is broken: the pool drops it, and the database ends the transaction.
        }
    }

    static <T> T run(DataSource dataSource, Work<T> work) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            if (!autoCommit) {
                c.rollback();
                c.setAutoCommit(true);
            }
            try {
                return work.run(c);
            } finally {
                if (!autoCommit) {
                    c.setAutoCommit(false);
                }
            }
        }
    }
}
