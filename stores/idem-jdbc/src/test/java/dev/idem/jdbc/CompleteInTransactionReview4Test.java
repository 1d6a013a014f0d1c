package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.Guard;
import dev.idem.Handler;
import dev.idem.IdempotencyKey;
import dev.idem.Outcome;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Fourth review of completeInTransaction (d41496f), on PostgreSQL. */
class CompleteInTransactionReview4Test {
    private static TestDatabase postgres;

    @BeforeAll
    static void open() {
        postgres = TestDatabase.postgres("CitReview4");
        postgres.execute(
                "CREATE TABLE IF NOT EXISTS payment (id VARCHAR(50) PRIMARY KEY, status VARCHAR(10) NOT NULL)");
        postgres.execute("CREATE TABLE IF NOT EXISTS audit (id VARCHAR(50) PRIMARY KEY)");
        postgres.execute("CREATE TABLE IF NOT EXISTS ledger (n SERIAL PRIMARY KEY, id VARCHAR(50) NOT NULL)");
        postgres.execute("DROP SEQUENCE IF EXISTS commit_attempts");
        postgres.execute("CREATE SEQUENCE commit_attempts");
        // The first COMMIT that carries a payment update fails as a serialization failure (40001), as SERIALIZABLE
        // commits do; nextval is not transactional, so later commits go through.
        postgres.execute("CREATE OR REPLACE FUNCTION fail_first_commit() RETURNS trigger AS $$ BEGIN"
                + " IF nextval('commit_attempts') = 1 THEN"
                + " RAISE EXCEPTION 'could not serialize access due to read/write dependencies among transactions'"
                + " USING ERRCODE = '40001'; END IF; RETURN NULL; END $$ LANGUAGE plpgsql");
    }

    @AfterAll
    static void close() {
        postgres.close();
    }

    private static String state(String id) throws SQLException {
        try (Connection c = postgres.connection();
                var ps = c.prepareStatement("SELECT state FROM idem_keys WHERE id = ?")) {
            ps.setString(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    private static String status(String id) throws SQLException {
        try (Connection c = postgres.connection();
                var ps = c.prepareStatement("SELECT status FROM payment WHERE id = ?")) {
            ps.setString(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        }
    }

    /**
     * docs/jdbc.md: "Any transaction manager works, e.g. a Spring @Transactional method" and "On PostgreSQL under
     * repeatable read or serializable write it first, before any other statement". A Spring-managed transaction that
     * does so and then catches a failed statement of its own (an insert-if-absent catching DuplicateKeyException) is
     * aborted by PostgreSQL; Spring's DataSourceTransactionManager commits it with Connection.commit(), which pgjdbc
     * answers without an exception (the server rolled it back: raiseExceptionOnSilentRollback is off by default). The
     * handler returns the outcome completeInTransaction answered, noted as completed: the guard answers PROCESSED, the
     * broker acks, and nothing was applied; the claim is left PROCESSING and no completion is recorded. The message is
     * lost (OwnTransaction checks the driver's transaction state before committing; the guard trusts any transaction
     * manager's word).
     */
    @Test
    @Timeout(60)
    void postgres_aSpringStyleTransactionSilentlyRolledBackAtCommit_isNotAnsweredProcessed() throws Exception {
        postgres.execute("DELETE FROM payment");
        postgres.execute("DELETE FROM audit");
        postgres.execute("INSERT INTO payment VALUES ('pay-b', 'PENDING')");
        postgres.execute("INSERT INTO audit VALUES ('pay-b')"); // audited by an earlier attempt
        JdbcStore store = JdbcStore.builder(postgres.dataSource())
                .createTableIfMissing(true)
                .build();
        try (Guard guard = Guard.builder(store).namespace("silent").build()) {
            Outcome outcome = guard.handle(Delivery.of("pay-b"), context -> {
                // what DataSourceTransactionManager does for @Transactional(isolation = REPEATABLE_READ)
                Connection c = postgres.dataSource().getConnection();
                try {
                    c.setAutoCommit(false);
                    c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
                    // the method body: the completion first, as the docs require under repeatable read
                    Outcome done = store.completeInTransaction(c, context, Outcome.processed());
                    try (var paid = c.prepareStatement("UPDATE payment SET status = 'PAID' WHERE id = ?")) {
                        paid.setString(1, "pay-b");
                        paid.executeUpdate();
                    }
                    try (var audit = c.prepareStatement("INSERT INTO audit VALUES (?)")) {
                        audit.setString(1, "pay-b");
                        audit.executeUpdate();
                    } catch (SQLException alreadyAudited) {
                        // jdbcTemplate.update(...) in try/catch (DuplicateKeyException e): already audited
                    }
                    c.commit(); // DataSourceTransactionManager.doCommit
                    return done;
                } finally {
                    c.setAutoCommit(true);
                    c.close();
                }
            });
            IdempotencyKey key = IdempotencyKey.of("silent", "pay-b");
            assertThat(outcome.isFinal() && !"PAID".equals(status("pay-b")))
                    .as("guard answered " + outcome + " (the broker acks) while payment is " + status("pay-b")
                            + " and the claim is " + state(key.storageId()))
                    .isFalse();
        }
    }

    /**
     * The auto-commit check is the only proof completeInTransaction asks for that a transaction will commit the
     * completion. A pool that hands out connections with auto-commit off (spring.datasource.hikari.auto-commit=false,
     * the usual Hibernate tuning, a pool the store itself supports: AutoCommit) passes it with no transaction manager
     * at all: a @Transactional method called on `this` (self-invocation, no proxy), or a JdbcStore built on another
     * DataSource bean than the one the transaction manager binds, gets from DataSourceUtils.getConnection a fresh
     * pooled connection that nobody commits; the repository's save commits on its own. The pool rolls the completion
     * back when the connection is released, the guard was told it is recorded and records none: the claim stays
     * PROCESSING, the broker acks, and a duplicate arriving once the lease has ended takes the key over and applies the
     * effect a second time. Now the guard reads the claim back, finds the completion not committed, and says so
     * instead of acking: the writes were not in the completion's transaction, which no library can repair (the retry
     * applies them again), so the handling must fail loudly, naming the cause.
     */
    @Test
    @Timeout(60)
    void postgres_aCompletionOnAnAutoCommitOffConnectionNobodyCommits_isNotAnsweredProcessed_andNamesTheCause()
            throws Exception {
        postgres.execute("DELETE FROM ledger");
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(postgres.url());
        config.setMaximumPoolSize(3);
        config.setAutoCommit(false);
        Duration lease = Duration.ofSeconds(1);
        try (HikariDataSource pool = new HikariDataSource(config)) {
            JdbcStore store = JdbcStore.builder(pool).createTableIfMissing(true).build();
            try (Guard guard =
                    Guard.builder(store).namespace("nocommit").lease(lease).build()) {
                Handler handler = context -> {
                    // repository.save(entry): SimpleJpaRepository's own @Transactional, committed
                    try (Connection own = pool.getConnection();
                            var ledger = own.prepareStatement("INSERT INTO ledger (id) VALUES (?)")) {
                        ledger.setString(1, "pay-a");
                        ledger.executeUpdate();
                        own.commit();
                    }
                    // store.completeInTransaction(DataSourceUtils.getConnection(dataSource), context, processed())
                    Connection c = pool.getConnection(); // no transaction bound: a fresh pooled connection
                    try {
                        return store.completeInTransaction(c, context, Outcome.processed());
                    } finally {
                        c.close(); // DataSourceUtils.releaseConnection; Hikari rolls back the uncommitted work
                    }
                };
                Outcome first = guard.handle(Delivery.of("pay-a"), handler);

                assertThat(first.type()).as(first.toString()).isEqualTo(Outcome.Type.FAILED);
                assertThat(first.reason())
                        .contains("did not commit")
                        .contains("not the transaction of the handler's writes");
                assertThat(ledgerRows("pay-a")).isEqualTo(1);
            }
        }
    }

    private static int ledgerRows(String id) throws SQLException {
        try (Connection c = postgres.connection();
                var ps = c.prepareStatement("SELECT count(*) FROM ledger WHERE id = ?")) {
            ps.setString(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /**
     * The renewals pause "while the handler's connection is open", standing for "while its transaction holds the
     * claim's row". A handler that runs its transactions itself on one connection (a connection per consumer thread,
     * a retry loop on the connection it holds, Spring's SingleConnectionDataSource) keeps it open after a rollback:
     * when the COMMIT fails retryably and the handler runs the transaction again on the same connection, the row is no
     * longer locked, nothing renews the lease, it lapses under the retry, and a redelivery on another consumer takes
     * the key over and charges a second time: review 3's finding (StoppedRenewalRetryReviewTest) without OwnTransaction.
     */
    @Test
    @Timeout(60)
    void postgres_aRetryOnTheSameConnection_keepsItsLeaseRenewed_soNoOtherConsumerTakesTheKeyOver() throws Exception {
        postgres.execute("DELETE FROM payment");
        postgres.execute("INSERT INTO payment VALUES ('pay-c', 'PENDING')");
        postgres.execute("ALTER SEQUENCE commit_attempts RESTART");
        postgres.execute("DROP TRIGGER IF EXISTS payment_commit ON payment");
        postgres.execute("CREATE CONSTRAINT TRIGGER payment_commit AFTER UPDATE ON payment"
                + " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fail_first_commit()");
        try {
            JdbcStore store = JdbcStore.builder(postgres.dataSource())
                    .createTableIfMissing(true)
                    .build();
            Duration lease = Duration.ofSeconds(2);
            List<String> charges = new CopyOnWriteArrayList<>();
            AtomicInteger attempts = new AtomicInteger();
            CountDownLatch retrying = new CountDownLatch(1);
            try (Guard consumer1 = Guard.builder(store)
                            .namespace("sameconn")
                            .lease(lease)
                            .build();
                    Guard consumer2 = Guard.builder(store)
                            .namespace("sameconn")
                            .lease(lease)
                            .build()) {
                CompletableFuture<Outcome> first =
                        CompletableFuture.supplyAsync(() -> consumer1.handle(Delivery.of("pay-c"), context -> {
                            charges.add("consumer 1"); // the call elsewhere, once per handling
                            try (Connection c = postgres.dataSource().getConnection()) {
                                c.setAutoCommit(false);
                                while (true) {
                                    try {
                                        if (attempts.incrementAndGet() == 2) {
                                            retrying.countDown();
                                            Thread.sleep(3 * lease.toMillis()); // the retry waits (a lock, backoff)
                                        }
                                        try (var paid =
                                                c.prepareStatement("UPDATE payment SET status = 'PAID' WHERE id = ?")) {
                                            paid.setString(1, "pay-c");
                                            paid.executeUpdate();
                                        }
                                        Outcome done = store.completeInTransaction(c, context, Outcome.processed());
                                        c.commit();
                                        return done;
                                    } catch (SQLException e) {
                                        c.rollback();
                                        if (!"40001".equals(e.getSQLState()) || attempts.get() > 3) {
                                            throw e;
                                        }
                                    }
                                }
                            }
                        }));
                if (!retrying.await(20, TimeUnit.SECONDS)) {
                    throw new AssertionError("no retry: " + first.get(1, TimeUnit.SECONDS));
                }
                Thread.sleep(lease.toMillis() + 500); // consumer 1's handler still runs, under its watchdog

                Outcome redelivery = consumer2.handle(Delivery.of("pay-c"), context -> {
                    charges.add("consumer 2");
                    return Outcome.processed();
                });
                Outcome firstOutcome = first.get(30, TimeUnit.SECONDS);

                assertThat(charges)
                        .as("the gateway charges; consumer 1 answered " + firstOutcome + ", the redelivery "
                                + redelivery)
                        .containsExactly("consumer 1");
            }
        } finally {
            postgres.execute("DROP TRIGGER IF EXISTS payment_commit ON payment");
        }
    }
}
