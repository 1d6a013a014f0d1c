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
