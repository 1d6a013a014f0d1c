package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.testkit.MutableClock;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;

/**
 * Every statement of {@code JdbcInbox}'s marks, end to end, on one pooled connection (its statement cache and
 * server-prepared plans reused): one key many times over (past every prepare threshold), batches with keys taken and
 * new, marks that expired, the caller's transaction under its savepoints. A duplicate must be a duplicate, an
 * expired mark must be taken over, each message's handler must run once.
 */
final class InboxStatementScenario {
    private InboxStatementScenario() {}

    /** The test class's database ({@link PerClassDatabase}) with the marks table and the handler's table. */
    static TestDatabase database(Class<?> testClass, Dialect dialect) {
        TestDatabase db = PerClassDatabase.of(testClass, dialect);
        JdbcStore.builder(db.dataSource()).createTableIfMissing(true).build();
        db.execute("CREATE TABLE IF NOT EXISTS effects (k VARCHAR(200) NOT NULL)");
        return db;
    }

    /**
     * Runs the scenario on a one-connection pool of {@code jdbcUrl}, with an inbox of its own namespace (derived
     * from {@code label}) that {@code configure} may set further (a dialect).
     */
    static void handlesEachMessageOnce(String jdbcUrl, String label, UnaryOperator<JdbcInbox.Builder> configure)
            throws Exception {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl);
        config.setMaximumPoolSize(1);
        try (HikariDataSource ds = new HikariDataSource(config)) {
            String ns = "m" + Integer.toHexString(label.hashCode() & 0x7fffffff);
            MutableClock clock = MutableClock.atNow();
            JdbcInbox inbox = configure
                    .apply(JdbcInbox.builder(ds).namespace(ns).clock(clock).retention(Duration.ofMinutes(1)))
                    .build();
            AtomicInteger runs = new AtomicInteger();
            TransactionalHandler effect = c -> {
                runs.incrementAndGet();
                try (Statement s = c.createStatement()) {
                    s.executeUpdate("INSERT INTO effects VALUES ('x')");
                }
                return Outcome.processed(new byte[] {7});
            };
            copiesOfFourKeys(inbox, effect, 8, label);
            assertThat(runs).as(label).hasValue(4);
            for (int b = 0; b < 8; b++) {
                List<Delivery> batch = new ArrayList<>();
                for (int k = 0; k < 6; k++) {
                    batch.add(Delivery.of("b" + (b + k), "f"));
                }
                List<Outcome> outcomes = inbox.handleBatch(batch, BatchHandler.eachOf(i -> effect));
                for (int k = 0; k < 6; k++) {
                    Outcome.Type expected = b == 0 || k == 5 ? Outcome.Type.PROCESSED : Outcome.Type.DUPLICATE;
                    assertThat(outcomes.get(k).type())
                            .as("%s: batch %d key %d: %s", label, b, k, outcomes.get(k))
                            .isEqualTo(expected);
                }
            }
            assertThat(runs).as(label).hasValue(4 + 13);
            clock.advance(Duration.ofMinutes(2));
            copiesOfFourKeys(inbox, effect, 6, label + ", marks expired");
            assertThat(runs).as(label).hasValue(4 + 13 + 4);
            try (Connection c = ds.getConnection()) {
                c.setAutoCommit(false);
                for (int i = 0; i < 7; i++) {
                    Outcome o = inbox.handle(c, Delivery.of("t", "f"), effect);
                    assertThat(o.type())
                            .as("%s: caller's transaction copy %d: %s", label, i, o)
                            .isEqualTo(i == 0 ? Outcome.Type.PROCESSED : Outcome.Type.DUPLICATE);
                }
                c.commit();
            }
            assertThat(runs).as(label).hasValue(4 + 13 + 4 + 1);
            try (Connection c = ds.getConnection();
                    Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM idem_keys WHERE id LIKE '" + ns + ":%'")) {
                rs.next();
                assertThat(rs.getLong(1)).as(label).isEqualTo(4 + 13 + 1);
            }
        }
    }

    /** {@code copies} copies of each of four keys: the first handled, the others duplicates answering its result. */
    private static void copiesOfFourKeys(JdbcInbox inbox, TransactionalHandler effect, int copies, String label) {
        for (int k = 0; k < 4; k++) {
            for (int i = 0; i < copies; i++) {
                Outcome o = inbox.handle(Delivery.of("k" + k, "f"), effect);
                assertThat(o.type())
                        .as("%s: key %d copy %d: %s", label, k, i, o)
                        .isEqualTo(i == 0 ? Outcome.Type.PROCESSED : Outcome.Type.DUPLICATE);
                if (i > 0) {
                    assertThat(o.result()).as(label).hasValue(new byte[] {7});
                }
            }
        }
    }
}
