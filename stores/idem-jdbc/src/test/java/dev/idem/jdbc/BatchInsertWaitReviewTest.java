package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Delivery;
import dev.idem.Guard;
import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.Outcome;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
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
 * Third review of 70d831a: claimAll reads its existing rows FOR UPDATE NOWAIT, but a key whose row another
 * transaction has inserted and not committed (a batch claim whose COMMIT never came back, or one still waiting in its
 * own insert) is invisible to that read: the batch's multi-row insert then waits for it, up to the 10 s query timeout,
 * while the batch holds every existing row it read. The owners of those rows cannot extend their leases meanwhile
 * (NOWAIT), their leases lapse under running handlers, and the batch itself, claiming each key alone after its
 * rollback, or a redelivery queued on the row, takes such a key over and runs its effect a second time. The fix's promise ("the batch never waits for
 * that row while it holds the others") does not hold for an uncommitted insert.
 */
class BatchInsertWaitReviewTest {
    private static TestDatabase postgres;

    @BeforeAll
    static void open() {
        postgres = TestDatabase.postgres("BatchInsertWaitReview");
    }

    @AfterAll
    static void close() {
        postgres.close();
    }

    @Test
    @Timeout(120)
    void postgres_aBatchClaimMeetingAnUncommittedInsert_doesNotHoldAnotherKeysRowUntilItsLeaseLapses()
            throws Exception {
        JdbcStore store = JdbcStore.builder(postgres.dataSource())
                .createTableIfMissing(true)
                .build();
        String ns = "review-insert-wait";
        String live = "a-live"; // an HTTP call, running under the watchdog
        String pending = "z-pending"; // inserted by a batch claim whose COMMIT never came back
        Duration lease = Duration.ofSeconds(2);
        AtomicInteger liveEffects = new AtomicInteger();
        CountDownLatch liveHandlerMayEnd = new CountDownLatch(1);
        List<IdempotencyEvent> events = new CopyOnWriteArrayList<>();
        Connection deadSession = DriverManager.getConnection(postgres.url());
        try (Guard consumer1 = Guard.builder(store)
                        .namespace(ns)
                        .lease(lease)
                        .listener(events::add)
                        .build();
                Guard batchConsumer =
                        Guard.builder(store).namespace(ns).lease(lease).build();
                Guard consumer3 =
                        Guard.builder(store).namespace(ns).lease(lease).build()) {
            // 1. consumer 1 handles a-live: an external effect taking several leases, extended by the watchdog.
            CompletableFuture<Outcome> liveHandling =
                    CompletableFuture.supplyAsync(() -> consumer1.handle(Delivery.of(live), ctx -> {
                        liveEffects.incrementAndGet();
                        liveHandlerMayEnd.await(60, TimeUnit.SECONDS);
                        return Outcome.processed();
                    }));
            while (liveEffects.get() == 0) {
                Thread.sleep(5);
            }
            // 2. Another consumer's batch claim inserted z-pending's row, and its COMMIT was lost on the network: the
            // server's session stays in its transaction with the uncommitted row.
            deadSession.setAutoCommit(false);
            try (PreparedStatement ps = deadSession.prepareStatement("INSERT INTO idem_keys (id, state, owner_token,"
                    + " fencing_token, expires_at, completed_at, fingerprint, result_data) VALUES (?, 'PROCESSING',"
                    + " 'lost-commit', nextval('idem_keys_fencing'), ?, NULL, NULL, NULL)")) {
                ps.setString(1, IdempotencyKey.of(ns, pending).storageId());
                ps.setLong(2, System.currentTimeMillis() + lease.toMillis());
                ps.executeUpdate();
            }

            // 3. A batch consumer gets a redelivery of both: a-live's row exists (read and locked, NOWAIT), z-pending's
            // is not visible, so the batch's insert waits (up to 10 s) for the dead session's insert.
            CompletableFuture<List<Outcome>> batch = CompletableFuture.supplyAsync(() ->
                    batchConsumer.handleAll(List.of(Delivery.of(live), Delivery.of(pending)), ctx -> {
                        if (ctx.key().equals(IdempotencyKey.of(ns, live))) {
                            liveEffects.incrementAndGet();
                        }
                        return Outcome.processed();
                    }));
            Thread.sleep(lease.toMillis() + 1000); // a-live's extensions fail at once, its lease lapses

            // 4. Another redelivery of a-live (consumer 3) queues behind the batch on a-live's row.
            CompletableFuture<Outcome> redelivery =
                    CompletableFuture.supplyAsync(() -> consumer3.handle(Delivery.of(live), ctx -> {
                        liveEffects.incrementAndGet();
                        return Outcome.processed();
                    }));
            List<Outcome> batchOutcomes = batch.get(60, TimeUnit.SECONDS);
            Outcome redeliveryOutcome = redelivery.get(60, TimeUnit.SECONDS);
            liveHandlerMayEnd.countDown();
            Outcome first = liveHandling.get(30, TimeUnit.SECONDS);
            long failedExtensions = events.stream()
                    .filter(e -> e.type() == IdempotencyEvent.Type.STORE_UNAVAILABLE
                            && e.keyLogId().equals(IdempotencyKey.of(ns, live).logId()))
                    .count();

            assertThat(liveEffects.get())
                    .as("a-live's external effect; its first handling " + first + ", the batch " + batchOutcomes
                            + ", the redelivery "
                            + redeliveryOutcome + "; "
                            + failedExtensions + " failed extensions of a-live")
                    .isEqualTo(1);
        } finally {
            liveHandlerMayEnd.countDown();
            deadSession.close();
        }
    }
}
