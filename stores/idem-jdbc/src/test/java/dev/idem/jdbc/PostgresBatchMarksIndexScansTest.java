package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Issue 24: the database work of a batch's marks on PostgreSQL, counted (not timed) in the caller's transaction with
 * {@code pg_stat_xact_user_tables}. The insert checks each id through the primary key once; a taken mark costs one
 * more lookup, to read its row. A new id must cost no second lookup (it found nothing and cost an index scan per id).
 */
class PostgresBatchMarksIndexScansTest {
    private static final int KEYS = 100;
    private static final int TAKEN = 30;

    @Test
    void batchOfMarks_looksUpOnlyTheTakenOnes() throws SQLException {
        TestDatabase db = PerClassDatabase.of(getClass(), Dialect.POSTGRESQL);
        JdbcInbox inbox = JdbcInbox.builder(db.dataSource())
                .namespace("scans")
                .createTableIfMissing(true)
                .build();
        List<Delivery> batch = new ArrayList<>();
        for (int i = 0; i < KEYS; i++) {
            batch.add(Delivery.of("k" + i));
        }
        inbox.handleBatch(batch.subList(0, TAKEN), (c, fresh) -> processed(fresh.size()));

        List<Outcome> outcomes;
        long scans;
        try (Connection tx = db.connection()) {
            tx.setAutoCommit(false);
            long before = indexScans(tx);
            outcomes = inbox.handleBatch(tx, batch, (c, fresh) -> processed(fresh.size()));
            scans = indexScans(tx) - before;
            tx.commit();
        }

        assertThat(outcomes.subList(0, TAKEN)).extracting(Outcome::type).containsOnly(Outcome.Type.DUPLICATE);
        assertThat(outcomes.subList(TAKEN, KEYS)).extracting(Outcome::type).containsOnly(Outcome.Type.PROCESSED);
        assertThat(scans)
                .as("index scans of idem_keys for %d ids of which %d taken", KEYS, TAKEN)
                .isLessThanOrEqualTo(KEYS + TAKEN);
    }

    private static List<Outcome> processed(int count) {
        return Collections.nCopies(count, Outcome.processed());
    }

    private static long indexScans(Connection c) throws SQLException {
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(
                        "SELECT COALESCE(SUM(idx_scan), 0) FROM pg_stat_xact_user_tables WHERE relname = 'idem_keys'")) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
