package dev.idem.bench.e2e;

import dev.idem.IdempotencyKey;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.StoredRecord;
import dev.idem.spi.UpdateResult;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * Simulated faults of one consumer JVM. A crash is an {@link Error} that unwinds the consumer thread: whatever the
 * contender would have done after that point (ack, complete, release, remove the mark) never happens. The thread is
 * marked dying first, so that a lease store wrapped by {@link #crashable} refuses the release or completion a library
 * still attempts while the error passes through it (a dead process sends nothing). Thread-safe.
 */
final class Faults {
    private final ThreadLocal<Boolean> dying = ThreadLocal.withInitial(() -> false);

    /** The business transaction failed after part of its work; the library sees an ordinary exception. */
    static final class HandlerFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        HandlerFailure(String key) {
            super("simulated handler failure for " + key, null, false, false);
        }
    }

    /** The consumer process died. */
    static final class Crash extends Error {
        private static final long serialVersionUID = 1L;

        Crash(String key) {
            super("simulated crash while handling " + key, null, false, false);
        }
    }

    Crash crash(String key) {
        dying.set(true);
        return new Crash(key);
    }

    /** Called by the consumer loop before each delivery: a new process after a crash. */
    void reborn() {
        dying.set(false);
    }

    boolean dying() {
        return dying.get();
    }

    /** {@code store}, except that a dying thread's complete and release never reach it. */
    IdempotencyStore crashable(IdempotencyStore store) {
        return new IdempotencyStore() {
            @Override
            public ClaimResult claim(ClaimRequest request) {
                return store.claim(request);
            }

            @Override
            public List<ClaimResult> claimAll(List<ClaimRequest> requests) {
                return store.claimAll(requests);
            }

            @Override
            public UpdateResult complete(
                    IdempotencyKey key, String owner, byte @Nullable [] result, Duration retention) {
                refuseIfDying();
                return store.complete(key, owner, result, retention);
            }

            @Override
            public CompletionStage<UpdateResult> completeAsync(
                    IdempotencyKey key, String owner, byte @Nullable [] result, Duration retention) {
                refuseIfDying();
                return store.completeAsync(key, owner, result, retention);
            }

            @Override
            public UpdateResult release(IdempotencyKey key, String owner) {
                refuseIfDying();
                return store.release(key, owner);
            }

            @Override
            public UpdateResult extend(IdempotencyKey key, String owner, Duration lease) {
                return store.extend(key, owner, lease);
            }

            @Override
            public Optional<StoredRecord> lookup(IdempotencyKey key) {
                return store.lookup(key);
            }

            @Override
            public String describe() {
                return store.describe();
            }

            @Override
            public void close() {
                store.close();
            }
        };
    }

    private void refuseIfDying() {
        if (dying.get()) {
            throw new StoreUnavailableException("consumer", "the consumer process is dead", null);
        }
    }
}
