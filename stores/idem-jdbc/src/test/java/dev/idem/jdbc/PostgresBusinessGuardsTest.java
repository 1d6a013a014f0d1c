package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.Outcome;
import dev.idem.RetryLaterException;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class PostgresBusinessGuardsTest extends BusinessGuardsContract {
    private final UniqueRowGuard ledger = UniqueRowGuard.builder()
            .table("transfer_ledger")
            .uniqueKey("transfer_id", "account_id")
            .build();
    private static final Map<String, Object> ROW = Map.of("transfer_id", "t-1", "account_id", "a", "amount", -100);

    @Override
    TestDatabase openDatabase() {
        return TestDatabase.postgres("PostgresBusinessGuardsTest");
    }

    /** Commits the same ledger row from another connection, after {@code c}'s snapshot was taken. */
    private void insertConcurrently(Connection c) throws SQLException {
        Statements.queryValue(c, "SELECT COUNT(*) FROM accounts", List.of()); // takes the snapshot
        try (Connection other = db.connection()) {
            other.setAutoCommit(true);
            Statements.update(
                    other,
                    "INSERT INTO transfer_ledger (transfer_id, account_id, amount) VALUES ('t-1', 'a', -100)",
                    List.of());
        }
    }

    /**
     * Regression: under REPEATABLE READ / SERIALIZABLE a row committed after the transaction's snapshot is a
     * serialization failure, which aborted the transaction and ended FAILED. In a transaction of its own the guard
     * runs the transaction again (new snapshot) and answers DUPLICATE.
     */
    @Test
    void uniqueRow_inItsOwnTransaction_underSnapshotIsolation_rowCommittedAfterTheSnapshot_isDuplicate() {
        for (String level : List.of("REPEATABLE READ", "SERIALIZABLE")) {
            db.execute("DELETE FROM transfer_ledger");
            AtomicInteger runs = new AtomicInteger();
            Outcome outcome = OwnTransaction.of(db.dataSource()).run(c -> {
                Statements.update(c, "SET TRANSACTION ISOLATION LEVEL " + level, List.of());
                if (runs.incrementAndGet() == 1) {
                    insertConcurrently(c);
                }
                return ledger.insertOnce(c, ROW, TransactionalHandler.NONE);
            });

            assertThat(outcome.type()).as("%s: %s", level, outcome).isEqualTo(Outcome.Type.DUPLICATE);
            assertThat(runs).hasValue(2);
        }
    }

    /** In the caller's transaction the guard cannot take a new snapshot: it asks the caller to run it again. */
    @Test
    void uniqueRow_inTheCallersTransaction_underRepeatableRead_rowCommittedAfterTheSnapshot_asksForARetry()
            throws SQLException {
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            insertConcurrently(c);

            assertThatThrownBy(() -> ledger.insertOnce(c, ROW, TransactionalHandler.NONE))
                    .isInstanceOf(RetryLaterException.class)
                    .hasMessageContaining("snapshot");
            c.rollback();
        }
    }
}
