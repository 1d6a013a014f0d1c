package dev.idem.jdbc;

import dev.idem.DeadLetterException;
import dev.idem.Outcome;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;

/** Runs guarded work in a transaction of its own: commit when the outcome is final, roll back otherwise. */
final class Transactions {
    private Transactions() {}

    @FunctionalInterface
    interface Work {
        Outcome run(Connection c) throws SQLException;
    }

    static Outcome inTransaction(DataSource dataSource, Work work) {
        try (Connection c = dataSource.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                Outcome outcome = work.run(c);
                if (outcome.isFinal()) {
                    c.commit();
                } else {
                    c.rollback();
                }
                return outcome;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                if (e instanceof DeadLetterException dead) {
                    return Outcome.rejected(dead.getMessage(), dead);
                }
                return Outcome.failed("transaction rolled back: " + e, e);
            } finally {
                c.setAutoCommit(autoCommit);
            }
        } catch (SQLException e) {
            return Outcome.failed("database unavailable: " + e.getMessage(), e);
        }
    }
}
