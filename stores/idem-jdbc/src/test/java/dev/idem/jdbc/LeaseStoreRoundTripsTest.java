package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.Guard;
import dev.idem.Handler;
import dev.idem.Outcome;
import dev.idem.testsupport.CountingSocketFactory;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Round trips on the wire per guarded message in lease mode ({@code Guard} + {@link JdbcStore}), counted by the
 * drivers' socket factory. PostgreSQL: a new message costs its claim and its completion, one statement each, a
 * duplicate its claim, on either clock. MariaDB: the claim of a free key is one insert, a duplicate's claim an insert
 * and a read; the database's clock costs one read more per claim. On a pool that hands out connections with auto-commit
 * off, each of those statements costs one commit more on MariaDB, and nothing more on PostgreSQL.
 */
class LeaseStoreRoundTripsTest {
    private static TestDatabase postgres;
    private static TestDatabase mariadb;

    @BeforeAll
    static void open() {
        postgres = TestDatabase.postgres("LeaseStoreRoundTripsTest");
        mariadb = TestDatabase.mariadb("LeaseStoreRoundTripsTest");
    }

    @AfterAll
    static void close() {
        postgres.close();
        mariadb.close();
    }

    enum Clock {
        JVM,
        DATABASE
    }

    @ParameterizedTest
    @EnumSource(Clock.class)
    void postgres_newMessage_costsTwoRoundTrips_andADuplicateOne(Clock clock) {
        assertRoundTrips(postgres, clock, 2, 1);
    }

    @ParameterizedTest
    @EnumSource(Clock.class)
    void mariadb_newMessage_costsTwoRoundTrips_andADuplicateTwo_plusOneForTheDatabaseClock(Clock clock) {
        int clockRead = clock == Clock.DATABASE ? 1 : 0;
        assertRoundTrips(mariadb, clock, 2 + clockRead, 2 + clockRead);
    }

    /** Issue 24: switching auto-commit on and back off cost MariaDB two round trips per store call. */
    @ParameterizedTest
    @EnumSource(Clock.class)
    void mariadb_onAManualCommitPool_eachStoreCallCostsOneCommitMore(Clock clock) {
        int clockRead = clock == Clock.DATABASE ? 1 : 0;
        assertRoundTrips(mariadb, clock, 2 + 2 + clockRead, 2 + 1 + clockRead, false);
    }

    @ParameterizedTest
    @EnumSource(Clock.class)
    void postgres_onAManualCommitPool_costsWhatItCostsInAutoCommit(Clock clock) {
        assertRoundTrips(postgres, clock, 2, 1, false);
    }

    /**
     * Issue 24: a claim completed in the handler's own transaction ({@link JdbcStore#completeInTransaction}) costs two
     * commits per new message, the claim's and the handler's transaction's, against three with a completion of its
     * own after the transaction, and no round trip more: the completion's statement moves into the transaction, which
     * {@link OwnTransaction} answers final only once committed (another transaction manager costs the guard's read of
     * the claim after it).
     */
    @ParameterizedTest
    @EnumSource(
            value = Dialect.class,
            names = {"POSTGRESQL", "MARIADB"})
    void completionInTheHandlersTransaction_savesACommit_andNoRoundTripMore(Dialect dialect) {
        TestDatabase db = dialect == Dialect.POSTGRESQL ? postgres : mariadb;
        try (HikariDataSource pool = db.countedPool(true)) {
            CommitCounter counter = new CommitCounter(pool);
            JdbcStore store = JdbcStore.builder(counter.dataSource())
                    .createTableIfMissing(true)
                    .build();
            OwnTransaction own = OwnTransaction.of(counter.dataSource());
            try (Guard guard =
                    Guard.builder(store).namespace("in-tx").watchdog(false).build()) {
                Handler apart = ctx -> own.run(c -> {
                    businessWrite(c);
                    return Outcome.processed();
                });
                Handler within = ctx -> own.run(c -> {
                    businessWrite(c);
                    return store.completeInTransaction(c, ctx, Outcome.processed());
                });
                for (int i = 0; i < 20; i++) { // warm the pool and the prepared statements
                    guard.handle(Delivery.of("warm-apart-" + i), apart);
                    guard.handle(Delivery.of("warm-within-" + i), within);
                }
                long commitsBefore = counter.commits();
                long apartTrips = perMessage(() -> guard.handle(Delivery.of("apart-" + next()), apart));
                long apartCommits = counter.commits() - commitsBefore;
                long withinTrips = perMessage(() -> guard.handle(Delivery.of("within-" + next()), within));
                long withinCommits = counter.commits() - commitsBefore - apartCommits;

                assertThat(apartCommits)
                        .as("commits with a completion of its own")
                        .isEqualTo(3);
                assertThat(withinCommits)
                        .as("commits with the completion in the transaction")
                        .isEqualTo(2);
                assertThat(withinTrips).as("round trips").isLessThanOrEqualTo(apartTrips);
            }
        }
    }

    /** A write of the handler's transaction, so that it has something to commit. */
    private static void businessWrite(Connection c) throws SQLException {
        try (Statement st = c.createStatement()) {
            st.executeUpdate("UPDATE idem_keys SET fingerprint = fingerprint WHERE id = 'none'");
        }
    }

    private static void assertRoundTrips(TestDatabase db, Clock clock, long perNew, long perDuplicate) {
        assertRoundTrips(db, clock, perNew, perDuplicate, true);
    }

    private static void assertRoundTrips(
            TestDatabase db, Clock clock, long perNew, long perDuplicate, boolean autoCommitPool) {
        try (HikariDataSource pool = db.countedPool(autoCommitPool)) {
            JdbcStore store = JdbcStore.builder(pool)
                    .createTableIfMissing(true)
                    .useDatabaseClock(clock == Clock.DATABASE)
                    .build();
            try (Guard guard = Guard.builder(store)
                    .namespace("trips-" + clock)
                    .watchdog(false)
                    .build()) {
                for (int i = 0; i < 20; i++) { // warm the pool and the prepared statements
                    guard.handle(Delivery.of("warm-" + i), c -> Outcome.processed());
                }
                long newTrips = perMessage(() -> guard.handle(Delivery.of("new-" + next()), c -> Outcome.processed()));
                String key = "dup-" + next();
                guard.handle(Delivery.of(key), c -> Outcome.processed());
                long duplicateTrips = perMessage(() -> guard.handle(Delivery.of(key), c -> Outcome.processed()));
                assertThat(newTrips).as("round trips of a new message").isLessThanOrEqualTo(perNew);
                assertThat(duplicateTrips).as("round trips of a duplicate").isLessThanOrEqualTo(perDuplicate);
            }
        }
    }

    private static int counter;

    private static int next() {
        return counter++;
    }

    private static long perMessage(Supplier<Outcome> handling) {
        long before = CountingSocketFactory.onThisThread();
        Outcome outcome = handling.get();
        assertThat(outcome.isFinal()).as(outcome.toString()).isTrue();
        return CountingSocketFactory.onThisThread() - before;
    }
}
