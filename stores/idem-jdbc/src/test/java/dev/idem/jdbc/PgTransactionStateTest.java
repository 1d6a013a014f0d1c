package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

class PgTransactionStateTest {

    @Test
    void pgjdbcConnection_throughThePool_reportsAnAbortedTransaction_withoutARoundTrip() throws SQLException {
        try (TestDatabase db = TestDatabase.postgres("PgTransactionStateTest");
                Connection c = db.connection()) {
            c.setAutoCommit(false);
            assertThat(PgTransactionState.isAborted(c)).contains(false);

            try (Statement s = c.createStatement()) {
                assertThatThrownBy(() -> s.execute("SELECT * FROM no_such_table"))
                        .isInstanceOf(SQLException.class);
            }

            assertThat(PgTransactionState.isAborted(c)).contains(true);
            c.rollback();
            assertThat(PgTransactionState.isAborted(c)).contains(false);
        }
    }

    @Test
    void otherDriver_isUnknown_soTheProbeFallsBackToAStatement() throws SQLException {
        try (TestDatabase db = TestDatabase.h2("PgTransactionStateTest");
                Connection c = db.connection()) {
            assertThat(PgTransactionState.isAborted(c)).isEmpty();
        }
    }
}
