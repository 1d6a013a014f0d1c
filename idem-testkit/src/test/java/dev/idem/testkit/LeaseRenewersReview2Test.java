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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Review 4 of the shared lease renewers (commit a3d1d43: one renewer thread per due extension, at most 64). */
class LeaseRenewersReview2Test {

    private final List<IdempotencyEvent> events = new CopyOnWriteArrayList<>();

    /**
     * Saturation: more than 64 handlings whose extensions hang (a hung Redis Cluster shard, rows held by other
     * transactions: each extension waits 400 ms, then fails). A failed extension keeps its due time, so every such
     * watch is due again at every sweep, and the sweep hands the renewers that freed up to the first due watches in
     * the {@code ConcurrentHashMap}'s iteration order (identity hash order, fixed while the set does not resize). The
     * same 64 hanging watches take every freed renewer at every sweep; every other watch, including handlings whose
     * store answers at once, is rejected at every sweep, silently (no event, no log), until its lease ends: another
     * consumer claims its key while its handler still runs (double effect). Here 200 hanging handlings and 8 free
     * ones share a guard with a 2 s lease. Expected: a free handling keeps its lease while others' extensions wait
     * for their store, as the commit says ("an extension that waits for its store delays no other").
     */
    @Test
    void freeHandlingsKeepTheirLeases_whenMoreThan64ExtensionsHang() throws Exception {
        Duration lease = Duration.ofSeconds(2);
        try (InMemoryStore realTime = InMemoryStore.create()) {
            AtomicInteger hanging = new AtomicInteger();
            AtomicInteger maxHanging = new AtomicInteger();
            IdempotencyStore hungShard = new ForwardingStore(realTime) {
                @Override
                public UpdateResult extend(IdempotencyKey key, String owner, Duration requested) {
                    if (key.key().startsWith("held-")) {
                        maxHanging.accumulateAndGet(hanging.incrementAndGet(), Math::max);
                        try {
                            sleepMillis(400);
                        } finally {
                            hanging.decrementAndGet();
                        }
                        throw new StoreUnavailableException(describe(), "command timed out", null);
                    }
                    return delegate.extend(key, owner, requested);
                }
            };
            int held = 200;
            int free = 8;
            ExecutorService handlers = Executors.newFixedThreadPool(held + free);
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
                LeaseWaits.waitFor(() -> maxHanging.get() >= 64, Duration.ofSeconds(10));
                assertThat(maxHanging.get()).as("renewers saturated").isGreaterThanOrEqualTo(64);
                for (int i = 0; i < free; i++) {
                    String key = "free-" + i;
                    handlers.submit(() -> g.run(key, () -> finish.await(30, TimeUnit.SECONDS)));
                }
                sleepMillis(100);

                List<String> stolen = new ArrayList<>();
                long end = System.nanoTime() + Duration.ofSeconds(5).toNanos();
                while (stolen.isEmpty() && System.nanoTime() < end) {
                    sleepMillis(100);
                    for (int i = 0; i < free; i++) {
                        IdempotencyKey key = IdempotencyKey.of("payments", "free-" + i);
                        if (realTime.claim(ClaimRequest.of(key, "another-consumer", lease))
                                instanceof ClaimResult.Acquired) {
                            stolen.add(key.key());
                        }
                    }
                }
                finish.countDown();

                assertThat(stolen)
                        .as("keys claimed by another consumer while their handler still runs under the watchdog")
                        .isEmpty();
            } finally {
                finish.countDown();
                handlers.shutdown();
                assertThat(handlers.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
            }
        }
    }

    /**
     * The pause condition a handler (or {@code JdbcStore.completeInTransaction}: {@code !connection.isClosed()}) sets
     * is asked on the one shared sweep thread of the JVM, not on a renewer: a condition that is slow (a driver whose
     * {@code isClosed()} takes the connection's lock while the handler's thread runs a statement on it, a pool proxy
     * that validates) stops the sweeps of every guard of the JVM, whatever their store, and their leases lapse.
     * Here one guard's handling has a condition that takes 3 s; a handling of another guard, on another store that
     * answers at once, has a 2 s lease. Expected: another guard's free handling keeps its lease (the renewers were
     * made so that no one handling's wait delays another's).
     */
    @Test
    void aSlowPauseConditionOfOneHandling_doesNotStopOtherGuardsRenewals() throws Exception {
        Duration lease = Duration.ofSeconds(2);
        try (InMemoryStore slowOnes = InMemoryStore.create();
                InMemoryStore other = InMemoryStore.create()) {
            ExecutorService handlers = Executors.newFixedThreadPool(2);
            CountDownLatch finish = new CountDownLatch(1);
            CountDownLatch paused = new CountDownLatch(1);
            try (Guard a = Guard.builder(slowOnes)
                            .namespace("orders")
                            .lease(lease)
                            .listener(events::add)
                            .build();
                    Guard b = Guard.builder(other)
                            .namespace("payments")
                            .lease(lease)
                            .listener(events::add)
                            .build()) {
                handlers.submit(() -> a.handle(Delivery.of("tx"), ctx -> {
                    ctx.pauseLeaseRenewalWhile(() -> {
                        sleepMillis(3000); // e.g. isClosed() waiting for the connection's lock
                        return true;
                    });
                    paused.countDown();
                    finish.await(30, TimeUnit.SECONDS);
                    return Outcome.processed();
                }));
                assertThat(paused.await(5, TimeUnit.SECONDS)).isTrue();
                handlers.submit(() -> b.run("free", () -> finish.await(30, TimeUnit.SECONDS)));

                IdempotencyKey free = IdempotencyKey.of("payments", "free");
                ClaimResult stolen = null;
                long end = System.nanoTime() + Duration.ofSeconds(5).toNanos();
                while (stolen == null && System.nanoTime() < end) {
                    sleepMillis(100);
                    ClaimResult c = other.claim(ClaimRequest.of(free, "another-consumer", lease));
                    if (c instanceof ClaimResult.Acquired) {
                        stolen = c;
                    }
                }
                finish.countDown();
                assertThat(stolen)
                        .as("another consumer's claim of a key whose handler still runs under another guard's watchdog")
                        .isNull();
            } finally {
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
