package dev.idem.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.jdbc.Dialect;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The relay's fetch on a table PostgreSQL has no statistics for (a new table, a burst not analysed yet) walks the
 * {@code (sent_at, id)} index in order and stops at the batch, and takes the blocked keys from the {@code retry_at}
 * index: it neither reads and sorts every unsent row nor walks them all again for the blocked keys (3.2–4.4 ms per
 * batch at 5,000 unsent in the outbox benchmark, against 0.15 ms). The plan is asserted, not the time. Without the
 * planner setting the same table gets a bitmap scan and a sort; without the blocked keys' order, a second walk of
 * the unsent rows.
 */
class PostgresDueFetchPlanTest {
    @Test
    void dueFetch_onATableNeverAnalysed_walksTheIndexes_andSortsNothing() throws Exception {
        try (TestDatabase db = TestDatabase.postgres("PostgresDueFetchPlanTest")) {
            String table = "plan_outbox";
            OutboxSchema.create(db.dataSource(), table);
            Outbox outbox = Outbox.builder().table(table).build();
            OutboxSql sql = new OutboxSql(Dialect.POSTGRESQL, table);
            List<String> plan = new ArrayList<>();
            try (Connection c = db.connection()) {
                c.setAutoCommit(false);
                for (int i = 0; i < 10_000; i++) {
                    outbox.send(
                            c,
                            OutboxMessage.to("payments").key("k" + (i % 1000)).payload("{}"));
                }
                c.commit();
                try (Statement s = c.createStatement()) {
                    s.executeUpdate("UPDATE " + table + " SET sent_at = 1 WHERE id IN (SELECT id FROM " + table
                            + " ORDER BY id LIMIT 5000)"); // half relayed, as in the benchmark's drain
                    c.commit();
                    s.execute(OutboxSql.WALK_INDEXES);
                }
                List<Object> parameters = new ArrayList<>(List.of(Long.MAX_VALUE - 1));
                for (int shard = 0; shard < 16; shard++) {
                    parameters.add(shard);
                }
                parameters.addAll(List.of(Long.MAX_VALUE - 1, 100));
                try (PreparedStatement ps = c.prepareStatement("EXPLAIN " + sql.dueQuery(16, 16))) {
                    RelayDatabase.bind(ps, parameters);
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            plan.add(rs.getString(1));
                        }
                    }
                }
                c.rollback();
            }
            assertThat(String.join("\n", plan))
                    .contains("Index Scan using " + table + "_sent_idx on " + table + " o")
                    .contains("Index Scan using " + table + "_retry_idx on " + table + " b")
                    .doesNotContain("Sort")
                    .doesNotContain("Bitmap");
        }
    }
}
