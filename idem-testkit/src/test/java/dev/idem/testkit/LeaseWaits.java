package dev.idem.testkit;

import dev.idem.IdempotencyKey;
import dev.idem.spi.IdempotencyStore;
import java.time.Duration;
import java.time.Instant;
import java.util.function.BooleanSupplier;

/** Bounded waits of the watchdog tests, run inside a handler while its lease is held. */
final class LeaseWaits {
    private LeaseWaits() {}

    /** Polls {@code done} every 5 ms for up to {@code bound}; answers whether it came true. */
    static boolean waitFor(BooleanSupplier done, Duration bound) throws InterruptedException {
        long giveUp = System.nanoTime() + bound.toNanos();
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > giveUp) {
                return false;
            }
            Thread.sleep(5);
        }
        return true;
    }

    /** Whether {@code key}'s lease deadline moves past the one it has now within {@code bound}. */
    static boolean extendedWithin(IdempotencyStore store, IdempotencyKey key, Duration bound)
            throws InterruptedException {
        Instant first = store.lookup(key).orElseThrow().expiresAt();
        return waitFor(() -> store.lookup(key).orElseThrow().expiresAt().isAfter(first), bound);
    }
}
