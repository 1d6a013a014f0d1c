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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * MariaDB's one-mark insert (ON DUPLICATE KEY UPDATE ... RETURNING, the inserted mark told by its owner column) and
 * the MySQL dialect's INSERT IGNORE path, both on the MariaDB server: a duplicate must be a duplicate and an expired
 * mark must be taken over, in the inbox's own transaction and in the caller's.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MariaDbInboxDialectsTest {
    private TestDatabase db;

    @BeforeAll
    void open() {
        db = TestDatabase.mariadb("MariaDbInboxDialectsTest");
        JdbcStore.builder(db.dataSource()).createTableIfMissing(true).build();
        db.execute("CREATE TABLE effects (k VARCHAR(200) NOT NULL)");
    }

    @AfterAll
    void close() {
        if (db != null) {
            db.close();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"MARIADB", "MYSQL"})
    void duplicatesAndExpiredMarks_onEachMySqlFamilyDialect(String options) throws Exception {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(db.url());
        config.setMaximumPoolSize(1); // one connection: its statement cache and server-prepared plans are reused
        try (HikariDataSource ds = new HikariDataSource(config)) {
            String ns = "m" + Integer.toHexString(options.hashCode() & 0x7fffffff);
            MutableClock clock = MutableClock.atNow();
            JdbcInbox inbox = JdbcInbox.builder(ds)
                    .dialect(Dialect.valueOf(options))
                    .namespace(ns)
                    .clock(clock)
                    .retention(Duration.ofMinutes(1))
                    .build();
            AtomicInteger runs = new AtomicInteger();
            TransactionalHandler effect = c -> {
                runs.incrementAndGet();
                try (Statement s = c.createStatement()) {
                    s.executeUpdate("INSERT INTO effects VALUES ('x')");
                }
                return Outcome.processed(new byte[] {7});
            };
            // one key, many times over: past every prepare threshold, generic plans included
            for (int k = 0; k < 4; k++) {
                for (int i = 0; i < 8; i++) {
                    Outcome o = inbox.handle(Delivery.of("k" + k, "f"), effect);
                    assertThat(o.type())
                            .as("%s: key %d copy %d: %s", options, k, i, o)
                            .isEqualTo(i == 0 ? Outcome.Type.PROCESSED : Outcome.Type.DUPLICATE);
                    if (i > 0) {
                        assertThat(o.result()).as(options).hasValue(new byte[] {7});
                    }
                }
            }
            assertThat(runs).as(options).hasValue(4);
            // batches: the array statement, some keys taken, some new
            for (int b = 0; b < 8; b++) {
                List<Delivery> batch = new ArrayList<>();
                for (int k = 0; k < 6; k++) {
                    batch.add(Delivery.of("b" + (b + k), "f"));
                }
                List<Outcome> outcomes = inbox.handleBatch(batch, BatchHandler.eachOf(i -> effect));
                for (int k = 0; k < 6; k++) {
                    Outcome.Type expected = b == 0 || k == 5 ? Outcome.Type.PROCESSED : Outcome.Type.DUPLICATE;
                    assertThat(outcomes.get(k).type())
                            .as("%s: batch %d key %d: %s", options, b, k, outcomes.get(k))
                            .isEqualTo(expected);
                }
            }
            assertThat(runs).as(options).hasValue(4 + 13);
            // every mark expires: each key is handled anew, once
            clock.advance(Duration.ofMinutes(2));
            for (int k = 0; k < 4; k++) {
                for (int i = 0; i < 6; i++) {
                    Outcome o = inbox.handle(Delivery.of("k" + k, "f"), effect);
                    assertThat(o.type())
                            .as("%s: expired key %d copy %d: %s", options, k, i, o)
                            .isEqualTo(i == 0 ? Outcome.Type.PROCESSED : Outcome.Type.DUPLICATE);
                }
            }
            assertThat(runs).as(options).hasValue(4 + 13 + 4);
            // the caller's transaction, under its savepoints
            try (Connection c = ds.getConnection()) {
                c.setAutoCommit(false);
                for (int i = 0; i < 7; i++) {
                    Outcome o = inbox.handle(c, Delivery.of("t", "f"), effect);
                    assertThat(o.type())
                            .as("%s: caller's transaction copy %d: %s", options, i, o)
                            .isEqualTo(i == 0 ? Outcome.Type.PROCESSED : Outcome.Type.DUPLICATE);
                }
                c.commit();
            }
            assertThat(runs).as(options).hasValue(4 + 13 + 4 + 1);
            try (Connection c = ds.getConnection();
                    Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM idem_keys WHERE id LIKE '" + ns + ":%'")) {
                rs.next();
                assertThat(rs.getLong(1)).as(options).isEqualTo(4 + 13 + 1);
            }
        }
    }
}
