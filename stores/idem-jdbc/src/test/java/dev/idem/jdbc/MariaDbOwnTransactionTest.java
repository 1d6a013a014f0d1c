package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Outcome;
import dev.idem.testsupport.CountingSocketFactory;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A guard's own transaction on MariaDB, which rolls a deadlock victim's whole transaction back: the work's connection is
 * watched, so a work that went cleanly costs no savepoint, and a work the watch cannot vouch for runs again under one.
 */
class MariaDbOwnTransactionTest {
    private static TestDatabase db;

    @BeforeAll
    static void open() {
        db = TestDatabase.mariadb("MariaDbOwnTransactionTest");
        db.execute("CREATE TABLE ledger (id VARCHAR(40) PRIMARY KEY) ENGINE=InnoDB");
        db.execute("CREATE TABLE hot (id INT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB");
        db.execute("CREATE TABLE heavy (id INT PRIMARY KEY) ENGINE=InnoDB");
    }

    @AfterAll
    static void close() {
        db.close();
    }

    @BeforeEach
    void fresh() {
        db.execute("DELETE FROM ledger");
        db.execute("DELETE FROM hot");
        db.execute("DELETE FROM heavy");
        db.execute("INSERT INTO hot VALUES (1, 0), (2, 0)");
    }

    /** Issue 24: the savepoint set before the work and released before the commit cost two round trips each time. */
    @Test
    void aCleanWork_costsItsStatementsAndTheCommit_noSavepoint() {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(CountingSocketFactory.urlWithCounting(db.url()));
        config.setMaximumPoolSize(1);
        try (HikariDataSource pool = new HikariDataSource(config)) {
            OwnTransaction own = OwnTransaction.of(pool);
            for (int i = 0; i < 20; i++) { // warm the pool, the detection and the prepared statements
                String id = "warm-" + i;
                assertThat(own.run(c -> insert(c, id)).type()).isEqualTo(Outcome.Type.PROCESSED);
            }
            long before = CountingSocketFactory.onThisThread();
            Outcome outcome = own.run(c -> insert(c, "counted"));
            long trips = CountingSocketFactory.onThisThread() - before;
            assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
            // auto-commit off, the insert, the commit that restores auto-commit
            assertThat(trips).as("round trips of one transaction").isEqualTo(3);
        }
    }

    /**
     * A work that catches a failed statement of its own and carries on: MariaDB kept the transaction (a duplicate key
     * fails the statement only), but the watch cannot tell that from a deadlock, so the work runs once more under a
     * savepoint, and the instance keeps the savepoint for every later work. Each work's writes commit once.
     */
    @Test
    void aWorkThatCaughtAFailedStatement_runsAgainUnderASavepoint_andItsWritesCommitOnce() throws SQLException {
        OwnTransaction own = OwnTransaction.of(db.dataSource());
        db.execute("INSERT INTO ledger VALUES ('taken')");
        AtomicInteger runs = new AtomicInteger();
        for (String id : List.of("first", "second")) {
            Outcome outcome = own.run(c -> {
                runs.incrementAndGet();
                insert(c, id);
                try {
                    insert(c, "taken");
                } catch (SQLException duplicate) {
                    // the work's choice: a duplicate is fine
                }
                return Outcome.processed();
            });
            assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
        }
        assertThat(runs.get()).as("the first work ran twice, the second once").isEqualTo(3);
        assertThat(count("SELECT COUNT(*) FROM ledger WHERE id IN ('first', 'second')"))
                .isEqualTo(2L);
    }

    /**
     * A work that catches the deadlock InnoDB chose it for, which rolled its whole transaction back, then writes on: what
     * it wrote before the deadlock is gone, and only a second run commits the whole work.
     */
    @Test
    @Timeout(60)
    void aWorkThatCaughtItsDeadlock_andWroteOn_neverCommitsHalfItsWork() throws Exception {
        OwnTransaction own = OwnTransaction.of(db.dataSource());
        CountDownLatch otherHoldsRow2 = new CountDownLatch(1);
        CountDownLatch victimHoldsRow1 = new CountDownLatch(1);
        CompletableFuture<Void> other = CompletableFuture.runAsync(() -> {
            try (Connection c = db.connection()) {
                c.setAutoCommit(false);
                try (Statement s = c.createStatement()) {
                    s.execute("INSERT INTO heavy SELECT seq FROM seq_1_to_5000"); // the heavier: InnoDB keeps it
                    s.execute("UPDATE hot SET v = v + 1 WHERE id = 2");
                    otherHoldsRow2.countDown();
                    victimHoldsRow1.await(20, TimeUnit.SECONDS);
                    Thread.sleep(300); // the victim now waits for row 2
                    s.execute("UPDATE hot SET v = v + 1 WHERE id = 1");
                }
                c.commit();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        AtomicInteger runs = new AtomicInteger();
        Outcome outcome = own.run(c -> {
            boolean first = runs.incrementAndGet() == 1;
            insert(c, "before-the-deadlock");
            try (Statement s = c.createStatement()) {
                s.execute("UPDATE hot SET v = v + 1 WHERE id = 1");
                if (first) {
                    otherHoldsRow2.await(20, TimeUnit.SECONDS);
                    victimHoldsRow1.countDown();
                    s.execute("UPDATE hot SET v = v + 1 WHERE id = 2");
                }
            } catch (SQLException deadlock) {
                assertThat(deadlock.getErrorCode()).isEqualTo(1213);
            }
            insert(c, "after-the-deadlock");
            return Outcome.processed();
        });
        other.get(30, TimeUnit.SECONDS);
        assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(runs.get()).isEqualTo(2);
        assertThat(count("SELECT COUNT(*) FROM ledger")).isEqualTo(2L);
    }

    private static long count(String sql) throws SQLException {
        try (Connection c = db.connection()) {
            return (long) Statements.queryValue(c, sql, List.of())
                    .map(v -> ((Number) v).longValue())
                    .orElseThrow();
        }
    }

    private static Outcome insert(Connection c, String id) throws SQLException {
        Statements.update(c, "INSERT INTO ledger VALUES (?)", List.of(id));
        return Outcome.processed();
    }
}
