package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Outcome;
import dev.idem.testsupport.CountingSocketFactory;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
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
        try (HikariDataSource pool = db.countedPool(true)) {
            OwnTransaction own = OwnTransaction.of(pool);
            warm(own);
            assertThat(roundTripsOf(own, c -> insert(c, "counted"))).isEqualTo(3);
        }
    }

    /** Hibernate with {@code use_sql_comments} starts every statement with a comment naming the entity. */
    @Test
    void aWorkWhoseStatementsStartWithAComment_costsNoSavepointEither() {
        try (HikariDataSource pool = db.countedPool(true)) {
            OwnTransaction own = OwnTransaction.of(pool);
            warm(own);
            TransactionalHandler commented = c -> {
                Statements.update(c, "/* insert com.example.Ledger */ INSERT INTO ledger VALUES (?)", List.of("noted"));
                return Outcome.processed();
            };
            assertThat(roundTripsOf(own, commented)).isEqualTo(3);
            assertThat(roundTripsOf(own, c -> insert(c, "after"))).isEqualTo(3);
        }
    }

    /**
     * Review: a redelivery through a {@link UniqueRowGuard} catches the duplicate key its insert ran into, which MariaDB
     * answers by failing that statement alone; the watch took it for a possible rollback, ran the work again and set the
     * savepoint for every later work of the instance.
     */
    @Test
    void aDuplicateCaughtByAUniqueRowGuard_runsTheWorkOnce_andLaterWorksStillCostNoSavepoint() {
        UniqueRowGuard ledger =
                UniqueRowGuard.builder().table("ledger").uniqueKey("id").build();
        AtomicInteger runs = new AtomicInteger();
        try (HikariDataSource pool = db.countedPool(true)) {
            OwnTransaction own = OwnTransaction.of(pool);
            warm(own);
            TransactionalHandler guarded = c -> {
                runs.incrementAndGet();
                return ledger.insertOnce(c, Map.of("id", "paid-once"), c2 -> Outcome.processed());
            };
            assertThat(own.run(guarded).type()).isEqualTo(Outcome.Type.PROCESSED);
            assertThat(own.run(guarded).type()).isEqualTo(Outcome.Type.DUPLICATE);
            assertThat(runs.get()).as("each delivery's work ran once").isEqualTo(2);
            assertThat(roundTripsOf(own, c -> insert(c, "after-the-duplicate"))).isEqualTo(3);
        }
    }

    /**
     * A work that catches a failed statement of its own and carries on (here a missing table: MariaDB keeps the
     * transaction, but the watch cannot tell that from a deadlock), so the work runs once more under a savepoint, and
     * the instance keeps the savepoint for every later work. Each work's writes commit once.
     */
    @Test
    void aWorkThatCaughtAnotherFailedStatement_runsAgainUnderASavepoint_andItsWritesCommitOnce() throws SQLException {
        OwnTransaction own = OwnTransaction.of(db.dataSource());
        AtomicInteger runs = new AtomicInteger();
        for (String id : List.of("first", "second")) {
            Outcome outcome = own.run(c -> {
                runs.incrementAndGet();
                insert(c, id);
                try {
                    Statements.update(c, "INSERT INTO no_such_table VALUES (1)", List.of());
                } catch (SQLException missing) {
                    // the work's choice
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

    /** Warms the pool, the database detection and the prepared statements. */
    private static void warm(OwnTransaction own) {
        for (int i = 0; i < 20; i++) {
            String id = "warm-" + i;
            assertThat(own.run(c -> insert(c, id)).type()).isEqualTo(Outcome.Type.PROCESSED);
        }
    }

    /** The round trips of one transaction: here auto-commit off, the work's statements, the commit. */
    private static long roundTripsOf(OwnTransaction own, TransactionalHandler work) {
        long before = CountingSocketFactory.onThisThread();
        Outcome outcome = own.run(work);
        long trips = CountingSocketFactory.onThisThread() - before;
        assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
        return trips;
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
