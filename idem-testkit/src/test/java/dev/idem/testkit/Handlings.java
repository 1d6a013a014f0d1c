package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Guard;
import dev.idem.IdempotencyKey;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.UpdateResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** Handlings that run under a guard's watchdog until the test closes them, and another consumer eyeing their keys. */
final class Handlings implements AutoCloseable {
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private final CountDownLatch finish = new CountDownLatch(1);

    /** Starts a handling of {@code key} that runs until {@link #close()}; returns once its handler runs. */
    void start(Guard guard, String key) throws InterruptedException {
        CountDownLatch running = new CountDownLatch(1);
        threads.submit(() -> guard.run(key, () -> {
            running.countDown();
            finish.await(30, TimeUnit.SECONDS);
        }));
        assertThat(running.await(10, TimeUnit.SECONDS))
                .as("handling of " + key + " running")
                .isTrue();
    }

    /** Runs {@code work} beside the handlings (ended by {@link #close()} too). */
    void submit(Runnable work) {
        threads.submit(work);
    }

    /** Ends every handling and waits for them. */
    @Override
    public void close() throws InterruptedException {
        finish.countDown();
        threads.shutdown();
        assertThat(threads.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
    }

    /** Waits for the handlings to end (they run until the test closes them). */
    void awaitEnd() throws InterruptedException {
        finish.await(30, TimeUnit.SECONDS);
    }

    /**
     * The keys of {@code namespace} another consumer manages to claim within {@code watchFor}, trying each every 100 ms
     * (stops at the first): a running handling's key must never be among them.
     */
    static List<String> takenOver(
            IdempotencyStore store, String namespace, List<String> keys, Duration lease, Duration watchFor)
            throws InterruptedException {
        List<String> taken = new ArrayList<>();
        long end = System.nanoTime() + watchFor.toNanos();
        while (taken.isEmpty() && System.nanoTime() < end) {
            Thread.sleep(100);
            for (String key : keys) {
                ClaimRequest claim = ClaimRequest.of(IdempotencyKey.of(namespace, key), "another-consumer", lease);
                if (store.claim(claim) instanceof ClaimResult.Acquired) {
                    taken.add(key);
                }
            }
        }
        return taken;
    }

    /**
     * A store whose extensions of keys starting with {@code held-} wait {@code wait} and fail, as a row another
     * transaction holds or a hung shard makes them; the others are answered by {@code delegate}.
     */
    static final class HangingExtensions extends ForwardingStore {
        final AtomicInteger mostAtOnce = new AtomicInteger();
        private final AtomicInteger hanging = new AtomicInteger();
        private final Duration wait;

        HangingExtensions(IdempotencyStore delegate, Duration wait) {
            super(delegate);
            this.wait = wait;
        }

        @Override
        public UpdateResult extend(IdempotencyKey key, String owner, Duration lease) {
            if (!key.key().startsWith("held-")) {
                return delegate.extend(key, owner, lease);
            }
            mostAtOnce.accumulateAndGet(hanging.incrementAndGet(), Math::max);
            try {
                Thread.sleep(wait.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                hanging.decrementAndGet();
            }
            throw new StoreUnavailableException(describe(), "the row is held by another transaction", null);
        }

        @Override
        public String describe() {
            return "hanging-extensions(" + delegate.describe() + ")";
        }
    }
}
