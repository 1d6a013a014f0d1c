package dev.idem.bench.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.testsupport.CountingSocketFactory;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Locale;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;

/**
 * Issue 15: what one message costs on the wire, counted (not timed) with {@link CountingSocketFactory} on PostgreSQL
 * and MariaDB, on a pool that hands out auto-commit connections and on one that does not. The baseline is the
 * hand-written limit: a conflict-free dedup insert and the business writes in one transaction, auto-commit switched
 * off and back only when the pool hands it out on. {@code JdbcInbox.handle} must not pay more, neither for a new
 * message nor for a duplicate.
 */
class InboxRoundTripsTest {
    private static final int MESSAGES = 20;

    /** Round trips per message: new ones, then a copy of each. */
    record Cost(double fresh, double duplicate) {
        @Override
        public String toString() {
            return String.format(Locale.ROOT, "%.2f new / %.2f duplicate", fresh, duplicate);
        }
    }

    @Test
    void postgres_inboxCostsNoMoreThanHandWritten_onBothPoolKinds() throws Exception {
        try (TestDatabase db = TestDatabase.postgres("InboxRoundTripsTest")) {
            compare(db);
        }
    }

    @Test
    void mariadb_inboxCostsNoMoreThanHandWritten_onBothPoolKinds() throws Exception {
        try (TestDatabase db = TestDatabase.mariadb("InboxRoundTripsTest")) {
            compare(db);
        }
    }

    private static void compare(TestDatabase db) throws Exception {
        db.execute("CREATE TABLE processed (id VARCHAR(200) PRIMARY KEY)");
        db.execute("CREATE TABLE account (id INT PRIMARY KEY, balance BIGINT NOT NULL)");
        db.execute("CREATE TABLE ledger (message_key VARCHAR(200) NOT NULL, amount BIGINT NOT NULL)");
        db.execute("INSERT INTO account VALUES (1, 1000000)");
        JdbcInbox.builder(db.dataSource())
                .namespace("setup")
                .createTableIfMissing(true)
                .build();
        SoftAssertions softly = new SoftAssertions();
        for (boolean autoCommit : new boolean[] {true, false}) {
            try (HikariDataSource pool = db.countedPool(autoCommit)) {
                JdbcInbox inbox =
                        JdbcInbox.builder(pool).namespace("n" + autoCommit).build();
                boolean postgres = db.engine() == TestDatabase.Engine.POSTGRESQL;
                Cost hand = cost("hand" + autoCommit, key -> handWritten(pool, postgres, key));
                Cost idem = cost("idem" + autoCommit, key -> inboxed(inbox, pool, key));
                String pool0 = db.engine() + (autoCommit ? " auto-commit pool" : " auto-commit-off pool");
                System.err.println(pool0 + ": hand-written " + hand + ", JdbcInbox.handle " + idem);
                softly.assertThat(idem.duplicate())
                        .as(pool0 + ": a duplicate costs no more than hand-written (" + hand + " vs " + idem + ")")
                        .isLessThanOrEqualTo(hand.duplicate());
                softly.assertThat(idem.fresh())
                        .as(pool0 + ": a new message costs no more than hand-written (" + hand + " vs " + idem + ")")
                        .isLessThanOrEqualTo(hand.fresh());
            }
        }
        softly.assertAll();
    }

    private interface Handling {
        boolean handle(String key) throws SQLException;
    }

    /** Round trips of {@link #MESSAGES} new messages and then of a copy of each, per message. */
    private static Cost cost(String prefix, Handling handling) throws SQLException {
        handling.handle(prefix + "-warm-up"); // the pool's first borrowing, the driver's first statements
        long start = CountingSocketFactory.onThisThread();
        for (int i = 0; i < MESSAGES; i++) {
            assertThat(handling.handle(prefix + "-" + i)).as("new").isTrue();
        }
        long fresh = CountingSocketFactory.onThisThread() - start;
        start = CountingSocketFactory.onThisThread();
        for (int i = 0; i < MESSAGES; i++) {
            assertThat(handling.handle(prefix + "-" + i)).as("duplicate").isFalse();
        }
        long duplicate = CountingSocketFactory.onThisThread() - start;
        return new Cost((double) fresh / MESSAGES, (double) duplicate / MESSAGES);
    }

    /** The hand-written limit; true when the key was new (and the payment applied). */
    private static boolean handWritten(HikariDataSource pool, boolean postgres, String key) throws SQLException {
        try (Connection c = pool.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            if (autoCommit) {
                c.setAutoCommit(false);
            }
            try (PreparedStatement insert = c.prepareStatement(
                    postgres
                            ? "INSERT INTO processed (id) VALUES (?) ON CONFLICT DO NOTHING"
                            : "INSERT IGNORE INTO processed (id) VALUES (?)")) {
                insert.setString(1, key);
                boolean fresh = insert.executeUpdate() == 1;
                if (fresh) {
                    pay(c, key);
                }
                c.commit();
                return fresh;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                if (autoCommit) {
                    c.setAutoCommit(true);
                }
            }
        }
    }

    private static boolean inboxed(JdbcInbox inbox, HikariDataSource pool, String key) {
        Outcome outcome = inbox.handle(Delivery.of(key), c -> {
            pay(c, key);
            return Outcome.processed();
        });
        assertThat(outcome.isFinal()).as(outcome.toString()).isTrue();
        return outcome.type() == Outcome.Type.PROCESSED;
    }

    private static void pay(Connection c, String key) throws SQLException {
        try (PreparedStatement debit = c.prepareStatement("UPDATE account SET balance = balance - 1 WHERE id = 1");
                PreparedStatement ledger = c.prepareStatement("INSERT INTO ledger VALUES (?, 1)")) {
            debit.executeUpdate();
            ledger.setString(1, key);
            ledger.executeUpdate();
        }
    }
}
