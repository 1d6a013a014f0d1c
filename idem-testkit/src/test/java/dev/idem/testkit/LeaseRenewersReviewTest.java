package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Delivery;
import dev.idem.Guard;
import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.UpdateResult;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Review 3 of the shared lease renewers (commit a729b3d). */
class LeaseRenewersReviewTest {

    private final List<IdempotencyEvent> events = new CopyOnWriteArrayList<>();

    /**
     * The initial burst: the priority ("last extension did not fail first") only helps after each held handling has
     * failed once. Twenty-four handlings whose rows stop answering (a hung Redis Cluster shard, rows held by other
     * transactions: each extension waits 400 ms, a fifth of the lease as Redis's default 2 s command timeout is of a
     * 10 s lease, then fails) fall due just before a free handling; none has failed yet, so all 24 are queued ahead
     * of it by due time and the four renewers work through 24 x 400 ms / 4 = 2.4 s of them first. The free
     * handling's first extension comes after its 2 s lease ended: another consumer claims its key while its handler
     * still runs (double effect). Expected: a free handling keeps its lease while others' extensions wait for their
     * store, as the commit says ("delays the others by a fraction of its bound, not by the sum of all such waits").
     */
    @Test
    void aFreeHandlingKeepsItsLease_whenMoreThanFourNeverFailedExtensionsHangOnTheirFirstTry() throws Exception {
        Duration lease = Duration.ofSeconds(2);
        try (InMemoryStore realTime = InMemoryStore.create()) {
            IdempotencyStore hungShard = new ForwardingStore(realTime) {
                @Override
                public UpdateResult extend(IdempotencyKey key, String owner, Duration requested) {
                    if (key.key().startsWith("held-")) {
                        sleepMillis(400);
                        throw new StoreUnavailableException(describe(), "command timed out", null);
                    }
                    return delegate.extend(key, owner, requested);
                }
            };
            int held = 24;
            ExecutorService handlers = Executors.newFixedThreadPool(held + 1);
            CountDownLatch handling = new CountDownLatch(held);
            CountDownLatch finish = new CountDownLatch(1);
            try (Guard g = Guard.builder(hungShard)
                    .namespace("payments")
                    .lease(lease)
                    .listener(events::add)
                    .build()) {
                for (int i = 0; i < held; i++) {
                    String key = "held-" + i;
                    handlers.submit(() -> g.run(key, () -> {
                        handling.countDown();
                        finish.await(30, TimeUnit.SECONDS);
                    }));
                }
                assertThat(handling.await(10, TimeUnit.SECONDS)).isTrue();
                sleepMillis(20);
                handlers.submit(() -> g.run("free", () -> finish.await(30, TimeUnit.SECONDS)));

                IdempotencyKey free = IdempotencyKey.of("payments", "free");
                ClaimResult stolen = null;
                long end = System.nanoTime() + Duration.ofSeconds(5).toNanos();
                while (stolen == null && System.nanoTime() < end) {
                    sleepMillis(100);
                    ClaimResult other = realTime.claim(ClaimRequest.of(free, "another-consumer", lease));
                    if (other instanceof ClaimResult.Acquired) {
                        stolen = other;
                    }
                }
                finish.countDown();

                assertThat(stolen)
                        .as("another consumer's claim of a key whose handler still runs under the watchdog")
                        .isNull();
            } finally {
                finish.countDown();
                handlers.shutdown();
                assertThat(handlers.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
            }
        }
    }

    /**
     * A renewal queued before {@code pauseLeaseRenewalWhile} runs after it: the sweep checks the pause when it queues
     * the renewal, the renewer does not check it again. Here the four renewers are busy (extensions of other handlings
     * waiting for their store), the handling's renewal falls due and is queued, then the handler writes its
     * completion in its transaction ({@code JdbcStore.completeInTransaction} holds the claim's row and pauses the
     * renewals). When a renewer frees up, the stale renewal extends the row the handler's transaction holds: on
     * PostgreSQL it waits for the lock and reports a false STORE_UNAVAILABLE (on MariaDB it is retried, also failing),
     * holding a renewer and a pool connection meanwhile; before the commit the window was a single check. Expected: no
     * extension of a claim while its renewals are paused.
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
            ExecutorService handlers = Executors.newFixedThreadPool(4);
            CountDownLatch finish = new CountDownLatch(1);
            try (Guard g = Guard.builder(store)
                    .namespace("payments")
                    .lease(Duration.ofMillis(1200))
                    .listener(events::add)
                    .build()) {
                for (int i = 0; i < 4; i++) {
                    String key = "block-" + i;
                    handlers.submit(() -> g.run(key, () -> finish.await(30, TimeUnit.SECONDS)));
                }
                LeaseWaits.waitFor(() -> blocked.get() >= 4, Duration.ofSeconds(10));
                assertThat(blocked.get()).as("renewers busy").isGreaterThanOrEqualTo(4);

                Outcome outcome = g.handle(Delivery.of("tx"), ctx -> {
                    sleepMillis(800); // due after 400 ms, queued by a sweep (every 200 ms) behind the busy renewers
                    AtomicBoolean transactionOpen = new AtomicBoolean(true);
                    ctx.pauseLeaseRenewalWhile(transactionOpen::get); // the completion holds the row from here
                    paused.set(true);
                    unblock.countDown();
                    sleepMillis(300);
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
                finish.countDown();
                handlers.shutdown();
                assertThat(handlers.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
            }
        }
    }

    private static void sleepMillis(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
