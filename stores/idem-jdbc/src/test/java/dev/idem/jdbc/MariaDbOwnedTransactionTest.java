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
        db.execute("CREATE TABLE t (id INT PRIMARY KEY)");
        db.execute("INSERT INTO t VALUES (1)");
    }

    @AfterAll
    void close() {
        db.close();
    }

    /** The isolation level of the transaction open on {@code c}, as InnoDB reports it. */
    private static String isolationOf(Connection c) throws SQLException {
        Statements.queryValue(c, "SELECT id FROM t WHERE id = 1 FOR UPDATE", List.of());
        return String.valueOf(Statements.queryValue(
                        c,
                        "SELECT trx_isolation_level FROM information_schema.INNODB_TRX"
                                + " WHERE trx_mysql_thread_id = CONNECTION_ID()",
                        List.of())
                .orElseThrow());
    }

    /**
     * Regression: a lease claim that lost an insert race rolled back and tried again in the same borrowing, and
     * {@code SET TRANSACTION} covers only the next transaction: the retry ran at the session's REPEATABLE READ (gap
     * locks).
     */
    @Test
    void everyTransactionOfABorrowing_runsReadCommitted_notOnlyTheFirst() throws SQLException {
        try (OwnedTransaction tx = OwnedTransaction.begin(db.dataSource(), Dialect.MARIADB, true)) {
            assertThat(isolationOf(tx.connection())).isEqualTo("READ COMMITTED");
            tx.rollback();
            assertThat(isolationOf(tx.connection())).isEqualTo("READ COMMITTED");
            tx.commit();
            assertThat(isolationOf(tx.connection())).isEqualTo("READ COMMITTED");
        }
    }

    @Test
    void anError_rollsBackBeforeAutoCommitIsRestored() throws SQLException {
        try (OwnedTransaction tx = OwnedTransaction.begin(db.dataSource(), Dialect.MARIADB, false)) {
            Statements.update(tx.connection(), "INSERT INTO t VALUES (2)", List.of());
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
