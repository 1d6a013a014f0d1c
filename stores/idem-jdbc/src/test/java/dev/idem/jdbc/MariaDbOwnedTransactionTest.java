package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** The owned-transaction path on MariaDB, whose sessions default to REPEATABLE READ. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MariaDbOwnedTransactionTest {
    private TestDatabase db;

    @BeforeAll
    void open() {
        db = TestDatabase.mariadb("MariaDbOwnedTransactionTest");
        db.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL)");
        db.execute("INSERT INTO t VALUES (1, 0)");
    }

    @AfterAll
    void close() {
        db.close();
    }

    /**
     * Whether the transaction open on {@code c} reads at READ COMMITTED: a row another transaction commits between
     * two of its reads is seen by the second (at REPEATABLE READ the first read's snapshot hides it).
     */
    private boolean readsCommitted(Connection c) throws SQLException {
        Object before = Statements.queryValue(c, "SELECT v FROM t WHERE id = 1", List.of())
                .orElseThrow();
        db.execute("UPDATE t SET v = v + 1 WHERE id = 1");
        Object after = Statements.queryValue(c, "SELECT v FROM t WHERE id = 1", List.of())
                .orElseThrow();
        return !before.equals(after);
    }

    /**
     * Regression: a lease claim that lost an insert race rolled back and tried again in the same borrowing, and
     * {@code SET TRANSACTION} covers only the next transaction: the retry ran at the session's REPEATABLE READ (gap
     * locks).
     */
    @Test
    void everyTransactionOfABorrowing_runsReadCommitted_notOnlyTheFirst() throws SQLException {
        try (OwnedTransaction tx = OwnedTransaction.begin(db.dataSource(), Dialect.MARIADB, true)) {
            assertThat(readsCommitted(tx.connection())).isTrue();
            tx.rollback();
            assertThat(readsCommitted(tx.connection())).as("after a rollback").isTrue();
            tx.commit();
            assertThat(readsCommitted(tx.connection())).as("after a commit").isTrue();
        }
    }

    @Test
    void anError_rollsBackBeforeAutoCommitIsRestored() throws SQLException {
        try (OwnedTransaction tx = OwnedTransaction.begin(db.dataSource(), Dialect.MARIADB, false)) {
            Statements.update(tx.connection(), "INSERT INTO t VALUES (2, 0)", List.of());
            throw new StackOverflowError("simulated");
        } catch (StackOverflowError expected) {
            // the crash passes through
        }
        try (Connection c = db.connection()) {
            assertThat(Statements.queryValue(c, "SELECT id FROM t WHERE id = 2", List.of()))
                    .isEmpty();
        }
    }
}
