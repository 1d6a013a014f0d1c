package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.RetryLaterException;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class PostgresInboxFaultsTest extends InboxFaultsContract {
    @Override
    protected TestDatabase open() {
        return TestDatabase.postgres("PostgresInboxFaultsTest");
    }

    @BeforeAll
    void createDeferredConstraint() {
        db.execute("CREATE TABLE refs (id VARCHAR(64) NOT NULL,"
                + " CONSTRAINT refs_unique_deferred UNIQUE (id) DEFERRABLE INITIALLY DEFERRED)");
    }

    @Override
    protected boolean refusesAtCommit() {
        return true;
    }

    /** Pays, then writes its reference twice: the deferred unique constraint refuses the commit. */
    @Override
    protected TransactionalHandler refusedAtCommit(String paymentId) {
        return c -> {
            pay(paymentId, 2, 20).handle(c);
            try (PreparedStatement ref = c.prepareStatement("INSERT INTO refs VALUES (?)")) {
                ref.setString(1, paymentId);
                ref.executeUpdate();
                ref.executeUpdate();
            }
            return Outcome.processed();
        };
    }

    /**
     * Regression: under REPEATABLE READ a mark committed after the caller's snapshot is a serialization failure;
     * retrying the insert inside the same transaction can never succeed (it was tried four times).
     */
    @Test
    void joinedTransaction_underRepeatableRead_copyCommittedAfterTheSnapshot_asksTheCallerToRetry() throws Exception {
        for (int level : new int[] {Connection.TRANSACTION_REPEATABLE_READ, Connection.TRANSACTION_SERIALIZABLE}) {
            String key = "p" + level;
            JdbcInbox inbox = inbox();
            try (Connection tx = db.connection()) {
                tx.setAutoCommit(false);
                tx.setTransactionIsolation(level);
                try (Statement s = tx.createStatement()) {
                    s.execute("SELECT 1 FROM accounts WHERE id = 1"); // takes the snapshot
                }
                assertThat(inbox.handle(Delivery.of(key), pay(key, 1, 10)).type())
                        .isEqualTo(Outcome.Type.PROCESSED);

                assertThatThrownBy(() -> inbox.handle(tx, Delivery.of(key), pay(key, 1, 10)))
                        .isInstanceOf(RetryLaterException.class)
                        .hasMessageContaining("snapshot");
                tx.rollback();
            }
            try (Connection tx = db.connection()) {
                tx.setAutoCommit(false);
                tx.setTransactionIsolation(level);
                assertThat(inbox.handle(tx, Delivery.of(key), pay(key, 1, 10)).type())
                        .as("the transaction run again")
                        .isEqualTo(Outcome.Type.DUPLICATE);
                tx.commit();
            }
            assertThat(ledgerRows(key)).isEqualTo(1);
        }
    }

    @Test
    void joinedTransaction_underRepeatableRead_markCommittedBeforeTheSnapshot_isDuplicate() throws SQLException {
        JdbcInbox inbox = inbox();
        inbox.handle(Delivery.of("p1"), pay("p1", 1, 10));
        try (Connection tx = db.connection()) {
            tx.setAutoCommit(false);
            tx.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            assertThat(inbox.handle(tx, Delivery.of("p1"), pay("p1", 1, 10)).type())
                    .isEqualTo(Outcome.Type.DUPLICATE);
            tx.commit();
        }
        assertThat(ledgerRows("p1")).isEqualTo(1);
    }
}
