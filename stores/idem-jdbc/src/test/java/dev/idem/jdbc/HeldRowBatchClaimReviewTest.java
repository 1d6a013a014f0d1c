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

/**
 * Second review of e371d10 (finding 1 fixed by a watchdog whose extend never waits): the row a completion holds in a
 * handler's transaction whose COMMIT was lost is still waited for, without bound, by a batch claim (claimAll) that
 * contains its key. That claim has already locked the other keys of its batch (in id order), so the leases of those
 * unrelated keys can no longer be extended: their extensions now fail at once, again and again, and their leases lapse
 * under their running handlers. When the dead session ends, a redelivery of such a key takes it over and its effect
 * runs twice: the consequence finding 1 described, now through a batch instead of the watchdog thread.
 */
class HeldRowBatchClaimReviewTest {
    private static TestDatabase postgres;

    @BeforeAll
    static void open() {
        postgres = TestDatabase.postgres("HeldRowBatchReview");
        postgres.execute("CREATE TABLE IF NOT EXISTS effects_in_tx (id VARCHAR(200) PRIMARY KEY)");
    }

    @AfterAll
    static void close() {
        postgres.close();
    }

    @Test
    @Timeout(120)
    void postgres_aBatchClaimWaitingForARowHeldByALostCommit_doesNotLetAnotherKeysLeaseLapse() throws Exception {
        JdbcStore store = JdbcStore.builder(postgres.dataSource())
                .createTableIfMissing(true)
                .build();
        String ns = "review-batch";
        String live = "a-live"; // an HTTP call, running under the watchdog
        String held = "z-held"; // completed in its transaction, COMMIT lost
        assertThat(Sql.ID_ORDER.compare(
                        IdempotencyKey.of(ns, live).storageId(),
                        IdempotencyKey.of(ns, held).storageId()))
                .as("the batch locks the live key's row first")
                .isNegative();
        Duration lease = Duration.ofSeconds(2);
        AtomicInteger liveEffects = new AtomicInteger();
        CountDownLatch liveHandlerMayEnd = new CountDownLatch(1);
        CountDownLatch completionWritten = new CountDownLatch(1);
        List<IdempotencyEvent> events = new CopyOnWriteArrayList<>();
        List<Connection> deadSessions = new CopyOnWriteArrayList<>();
        try (Guard consumer1 = Guard.builder(store)
                        .namespace(ns)
                        .lease(lease)
                        .listener(events::add)
                        .build();
                Guard batchConsumer =
                        Guard.builder(store).namespace(ns).lease(lease).build();
                Guard consumer3 =
                        Guard.builder(store).namespace(ns).lease(lease).build()) {
            // 1. consumer 1 handles a-live: an external effect taking several leases, its lease extended by the
            // watchdog.
            CompletableFuture<Outcome> liveHandling =
                    CompletableFuture.supplyAsync(() -> consumer1.handle(Delivery.of(live), ctx -> {
                        liveEffects.incrementAndGet();
                        liveHandlerMayEnd.await(30, TimeUnit.SECONDS);
                        return Outcome.processed();
                    }));
            while (liveEffects.get() == 0) {
                Thread.sleep(5);
            }
            // 2. consumer 1 handles z-held with completeInTransaction; the COMMIT is lost on the network: the
            // server's session stays in its transaction, holding the row (as the server keeps a dead client's session).
            CompletableFuture<Outcome> heldHandling =
                    CompletableFuture.supplyAsync(() -> consumer1.handle(Delivery.of(held), ctx -> {
                        Connection c = DriverManager.getConnection(postgres.url());
                        deadSessions.add(c);
                        c.setAutoCommit(false);
                        try (PreparedStatement ps = c.prepareStatement("INSERT INTO effects_in_tx (id) VALUES (?)")) {
                            ps.setString(1, held);
                            ps.executeUpdate();
                        }
                        store.completeInTransaction(c, ctx, Outcome.processed());
                        completionWritten.countDown();
                        throw new SQLException("An I/O error occurred while sending to the backend.", "08006");
                    }));
            assertThat(completionWritten.await(10, TimeUnit.SECONDS)).isTrue();

            // 3. A batch consumer gets both messages (a redelivery of each, e.g. after a rebalance): its claimAll
            // locks a-live's row, then waits for z-held's.
            CompletableFuture<List<Outcome>> batch = CompletableFuture.supplyAsync(() ->
                    batchConsumer.handleAll(List.of(Delivery.of(live), Delivery.of(held)), ctx -> {
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
            Thread.sleep(1000);

            // 5. The server finally ends the dead session (idle_in_transaction_session_timeout, TCP keepalive).
            for (Connection c : deadSessions) {
                c.close();
            }
            List<Outcome> batchOutcomes = batch.get(30, TimeUnit.SECONDS);
            Outcome redeliveryOutcome = redelivery.get(30, TimeUnit.SECONDS);
            liveHandlerMayEnd.countDown();
            Outcome first = liveHandling.get(30, TimeUnit.SECONDS);
            heldHandling.get(30, TimeUnit.SECONDS);
            long failedExtensions = events.stream()
                    .filter(e -> e.type() == IdempotencyEvent.Type.STORE_UNAVAILABLE
                            && e.keyLogId().equals(IdempotencyKey.of(ns, live).logId()))
                    .count();

            assertThat(liveEffects.get())
                    .as("a-live's external effect; its first handling " + first + ", the batch " + batchOutcomes
                            + ", the redelivery " + redeliveryOutcome + "; " + failedExtensions
                            + " failed extensions of a-live")
                    .isEqualTo(1);
        } finally {
            liveHandlerMayEnd.countDown();
            for (Connection c : deadSessions) {
                c.close();
            }
        }
    }
}
