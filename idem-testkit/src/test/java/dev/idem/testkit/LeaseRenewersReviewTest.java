package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Delivery;
import dev.idem.Guard;
import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.UpdateResult;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * The lease watchdog's renewals while other handlings' extensions wait for their store (session 20: a review of the
 * PostgreSQL extension's bounded wait, then two reviews of the shared renewers). Each test was red on the version it
 * names.
 */
class LeaseRenewersReviewTest {
    private static final Duration LEASE = Duration.ofSeconds(2);

    private final List<IdempotencyEvent> events = new CopyOnWriteArrayList<>();

    /**
     * Every renewal ran on the one shared sweep thread, one after the other (before {@code a729b3d}): twenty
     * handlings whose extensions each waited 150 ms for their store (rows other transactions hold: the JDBC store's
     * bounded wait) made a sweep last 3 s, longer than a 2 s lease, and a handling whose own extension was instant
     * lost its lease to another consumer while its handler still ran: two handlers on one key.
     */
    @Test
    void aHandlingKeepsItsLease_whileTheExtensionsOfTwentyOthersWaitForTheirStore() throws Exception {
        assertThat(freeKeysTakenOver(20, Duration.ofMillis(150), 1, 0)).isEmpty();
    }

    /**
     * Four renewers in priority order ("last extension did not fail" first, {@code a729b3d}) only helped once each
     * held handling had failed once: twenty-four handlings whose first extension waits 400 ms (a fifth of the lease, as
     * Redis's 2 s command timeout is of a 10 s lease) came before a free one, 24 x 400 ms / 4 = 2.4 s, past its lease.
     */
    @Test
    void aFreeHandlingKeepsItsLease_whenMoreThanFourNeverFailedExtensionsHangOnTheirFirstTry() throws Exception {
        assertThat(freeKeysTakenOver(24, Duration.ofMillis(400), 1, 0)).isEmpty();
    }

    /**
     * Beyond the 64 renewers of {@code a3d1d43}, hanging extensions (200 handlings on a hung shard) took every freed
     * renewer at every sweep, in the set's fixed order, and free handlings started after the saturation were refused a
     * thread until their leases ended.
     */
    @Test
    void freeHandlingsKeepTheirLeases_whenMoreThan64ExtensionsHang() throws Exception {
        assertThat(freeKeysTakenOver(200, Duration.ofMillis(400), 8, 64)).isEmpty();
    }

    /**
     * A renewal queued before {@code pauseLeaseRenewalWhile} ran after it ({@code a729b3d}): the sweep checked the pause
     * when it queued the renewal, the renewer did not check it again. Here the renewers are busy, the handling's
     * renewal falls due, then the handler writes its completion in its transaction ({@code
     * JdbcStore.completeInTransaction} holds the claim's row and pauses the renewals): the stale renewal extended the
     * row the transaction holds (on PostgreSQL a wait for the lock and a false STORE_UNAVAILABLE).
     */
    @Test
    void aRenewalQueuedBeforeThePause_doesNotExtendWhileThePauseHolds() throws Exception {
        try (InMemoryStore realTime = InMemoryStore.create()) {
            CountDownLatch unblock = new CountDownLatch(1);
            AtomicInteger blocked = new AtomicInteger();
            AtomicBoolean paused = new AtomicBoolean();
            AtomicInteger extendedWhilePaused = new AtomicInteger();
            IdempotencyStore store = new ForwardingStore(realTime) {
                @Override
                public UpdateResult extend(IdempotencyKey key, String owner, Duration requested) {
                    if (key.key().startsWith("block-")) {
                        blocked.incrementAndGet();
                        try {
                            unblock.await(10, TimeUnit.SECONDS);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    } else if (paused.get()) {
                        extendedWhilePaused.incrementAndGet();
                    }
                    return delegate.extend(key, owner, requested);
                }
            };
            try (Guard g = guard(store, Duration.ofMillis(1200));
                    Handlings handlings = new Handlings()) {
                for (int i = 0; i < 4; i++) {
                    handlings.start(g, "block-" + i);
                }
                LeaseWaits.waitFor(() -> blocked.get() >= 4, Duration.ofSeconds(10));
                assertThat(blocked.get()).as("renewers busy").isGreaterThanOrEqualTo(4);

                Outcome outcome = g.handle(Delivery.of("tx"), ctx -> {
                    Thread.sleep(800); // due after 400 ms, handed over by a sweep (every 200 ms)
                    AtomicBoolean transactionOpen = new AtomicBoolean(true);
                    ctx.pauseLeaseRenewalWhile(transactionOpen::get); // the completion holds the row from here
                    paused.set(true);
                    unblock.countDown();
                    Thread.sleep(300);
                    paused.set(false);
                    transactionOpen.set(false);
                    return Outcome.processed();
                });

                assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
                assertThat(extendedWhilePaused.get())
                        .as(
                                "extensions of a claim whose renewals are paused (its row held by the handler's transaction)")
                        .isZero();
            } finally {
                unblock.countDown();
            }
        }
    }

    /**
     * The pause condition a handler (or {@code JdbcStore.completeInTransaction}: {@code !connection.isClosed()}) sets
     * was asked on the one shared sweep thread of the JVM ({@code a3d1d43}): a slow condition (a driver whose {@code
     * isClosed()} waits for the connection's lock) stopped the sweeps of every guard, whatever their store. Here one
     * guard's handling has a condition that takes 3 s; another guard's handling, on a store that answers at once, has a
     * 2 s lease.
     */
    @Test
    void aSlowPauseConditionOfOneHandling_doesNotStopOtherGuardsRenewals() throws Exception {
        try (InMemoryStore slowOnes = InMemoryStore.create();
                InMemoryStore other = InMemoryStore.create();
                Guard a = guard(slowOnes, LEASE);
                Guard b = guard(other, LEASE);
                Handlings handlings = new Handlings()) {
            CountDownLatch paused = new CountDownLatch(1);
            handlings.submit(() -> a.handle(Delivery.of("tx"), ctx -> {
                ctx.pauseLeaseRenewalWhile(() -> {
                    sleep(Duration.ofSeconds(3)); // e.g. isClosed() waiting for the connection's lock
                    return true;
                });
                paused.countDown();
                handlings.awaitEnd();
                return Outcome.processed();
            }));
            assertThat(paused.await(5, TimeUnit.SECONDS)).isTrue();
            handlings.start(b, "free");

            assertThat(Handlings.takenOver(other, "payments", List.of("free"), LEASE, Duration.ofSeconds(5)))
                    .as("keys claimed by another consumer while their handler runs under another guard's watchdog")
                    .isEmpty();
        }
    }

    /**
     * Runs {@code held} handlings whose extensions wait {@code wait} and fail, then (once {@code saturatedAt} of those
     * extensions wait at once) {@code free} handlings whose store answers at once; answers the free keys another
     * consumer could claim within 5 s, while every handling still runs.
     */
    private List<String> freeKeysTakenOver(int held, Duration wait, int free, int saturatedAt) throws Exception {
        try (InMemoryStore realTime = InMemoryStore.create()) {
            Handlings.HangingExtensions store = new Handlings.HangingExtensions(realTime, wait);
            try (Guard g = guard(store, LEASE);
                    Handlings handlings = new Handlings()) {
                for (int i = 0; i < held; i++) {
                    handlings.start(g, "held-" + i);
                }
                LeaseWaits.waitFor(() -> store.mostAtOnce.get() >= saturatedAt, Duration.ofSeconds(10));
                assertThat(store.mostAtOnce.get())
                        .as("extensions waiting at once")
                        .isGreaterThanOrEqualTo(saturatedAt);
                List<String> freeKeys =
                        IntStream.range(0, free).mapToObj(i -> "free-" + i).toList();
                for (String key : freeKeys) {
                    handlings.start(g, key);
                }
                return Handlings.takenOver(realTime, "payments", freeKeys, LEASE, Duration.ofSeconds(5));
            }
        }
    }

    private Guard guard(IdempotencyStore store, Duration lease) {
        return Guard.builder(store)
                .namespace("payments")
                .lease(lease)
                .listener(events::add)
                .build();
    }

    private static void sleep(Duration duration) {
        try {
            Thread.sleep(duration.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
