package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Delivery;
import dev.idem.Guard;
import dev.idem.Outcome;
import dev.idem.testsupport.TestDatabase;
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

/**
 * Third review of 70d831a: completeInTransaction stops the lease renewals of its claim as soon as its UPDATE changed
 * the row, before the transaction's fate is known. When that transaction then does not commit but is run again
 * (OwnTransaction retries a deadlock or serialization failure, here one PostgreSQL raises at COMMIT, as it does under
 * SERIALIZABLE), the rollback released the row and nothing renews the lease any more: a retry that takes longer than
 * what is left of the lease (a slow gateway call, a lock wait) loses the claim, and a redelivery on another consumer
 * takes it over and applies the effect a second time. Before 70d831a the watchdog kept renewing during the retry.
 */
class StoppedRenewalRetryReviewTest {
    private static TestDatabase postgres;

    @BeforeAll
    static void open() {
        postgres = TestDatabase.postgres("StoppedRenewalRetryReview");
        postgres.execute(
                "CREATE TABLE IF NOT EXISTS payment (id VARCHAR(50) PRIMARY KEY, status VARCHAR(10) NOT NULL)");
        postgres.execute("DROP SEQUENCE IF EXISTS commit_attempts");
        postgres.execute("CREATE SEQUENCE commit_attempts");
        // The first COMMIT that carries a payment update fails as a serialization failure (40001), as SERIALIZABLE
        // commits do; nextval is not transactional, so later commits go through.
        postgres.execute("CREATE OR REPLACE FUNCTION fail_first_commit() RETURNS trigger AS $$ BEGIN"
                + " IF nextval('commit_attempts') = 1 THEN"
                + " RAISE EXCEPTION 'could not serialize access due to read/write dependencies among transactions'"
                + " USING ERRCODE = '40001'; END IF; RETURN NULL; END $$ LANGUAGE plpgsql");
        postgres.execute("DROP TRIGGER IF EXISTS payment_commit ON payment");
        postgres.execute("CREATE CONSTRAINT TRIGGER payment_commit AFTER UPDATE ON payment"
                + " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fail_first_commit()");
    }

    @AfterAll
    static void close() {
        postgres.close();
    }

    @Test
    @Timeout(60)
    void postgres_aCompletionWhoseCommitIsRetried_keepsItsLeaseRenewed_soNoOtherConsumerTakesTheKeyOver()
            throws Exception {
        postgres.execute("DELETE FROM payment");
        postgres.execute("INSERT INTO payment VALUES ('pay-1', 'PENDING')");
        postgres.execute("ALTER SEQUENCE commit_attempts RESTART");
        JdbcStore store = JdbcStore.builder(postgres.dataSource())
                .createTableIfMissing(true)
                .build();
        Duration lease = Duration.ofSeconds(2);
        List<String> charges = new CopyOnWriteArrayList<>();
        AtomicInteger attempts = new AtomicInteger();
        CountDownLatch retrying = new CountDownLatch(1);
        OwnTransaction tx = OwnTransaction.of(postgres.dataSource());
        try (Guard consumer1 =
                        Guard.builder(store).namespace("retry").lease(lease).build();
                Guard consumer2 =
                        Guard.builder(store).namespace("retry").lease(lease).build()) {
            CompletableFuture<Outcome> first =
                    CompletableFuture.supplyAsync(() -> consumer1.handle(Delivery.of("pay-1"), context -> {
                        charges.add("consumer 1"); // the call elsewhere, once per handling
                        return tx.run(c -> {
                            if (attempts.incrementAndGet() == 2) {
                                retrying.countDown();
                                Thread.sleep(3 * lease.toMillis()); // the retry waits (a lock, a slow call)
                            }
                            try (var paid = c.prepareStatement("UPDATE payment SET status = 'PAID' WHERE id = ?")) {
                                paid.setString(1, "pay-1");
                                paid.executeUpdate();
                            }
                            return store.completeInTransaction(c, context, Outcome.processed());
                        });
                    }));
            if (!retrying.await(20, TimeUnit.SECONDS)) {
                throw new AssertionError("no retry: " + first.get(1, TimeUnit.SECONDS));
            }
            Thread.sleep(lease.toMillis() + 500); // consumer 1's handler still runs, under its watchdog

            Outcome redelivery = consumer2.handle(Delivery.of("pay-1"), context -> {
                charges.add("consumer 2");
                return Outcome.processed();
            });
            Outcome firstOutcome = first.get(30, TimeUnit.SECONDS);

            assertThat(charges)
                    .as("the gateway charges; consumer 1 answered " + firstOutcome + ", the redelivery " + redelivery)
                    .containsExactly("consumer 1");
        }
    }
    /**
     * The documented example (README, docs/jdbc.md, ReadmeJdbcExampleTest "lease-in-transaction") puts the gateway
     * call inside OwnTransaction.run, next to the comment "the call elsewhere: one handler at a time per key". A
     * COMMIT that fails retryably (a serialization failure or deadlock) makes OwnTransaction run the whole work again
     * in the same handling, so the gateway is charged twice by one consumer, with no redelivery at all.
     */
    @Test
    @Timeout(60)
    void postgres_theDocumentedExample_chargesOnce_whenItsCommitIsRetried() throws Exception {
        postgres.execute("DELETE FROM payment");
        postgres.execute("INSERT INTO payment VALUES ('pay-2', 'PENDING')");
        postgres.execute("ALTER SEQUENCE commit_attempts RESTART");
        JdbcStore store = JdbcStore.builder(postgres.dataSource())
                .createTableIfMissing(true)
                .build();
        List<String> charges = new CopyOnWriteArrayList<>();
        try (Guard guard = Guard.builder(store).namespace("example").build()) {
            OwnTransaction tx = OwnTransaction.of(postgres.dataSource());
            Outcome outcome = guard.handle(Delivery.of("pay-2"), context -> {
                charges.add("pay-2"); // gateway.charge(message): the call elsewhere, now outside the transaction
                return tx.run(c -> {
                    try (var paid = c.prepareStatement("UPDATE payment SET status = 'PAID' WHERE id = ?")) {
                        paid.setString(1, "pay-2");
                        paid.executeUpdate(); // your write
                    }
                    return store.completeInTransaction(c, context, Outcome.processed()); // last; return it
                });
            });
            assertThat(charges)
                    .as("gateway charges; the guard answered " + outcome)
                    .hasSize(1);
        }
    }
}
