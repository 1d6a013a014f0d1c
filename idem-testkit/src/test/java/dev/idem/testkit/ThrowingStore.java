package dev.idem.testkit;

import dev.idem.IdempotencyKey;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.Completion;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.UpdateResult;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * A store that throws everything a store can throw: each chosen operation throws {@link #failure} (any runtime
 * exception, not only {@code StoreUnavailableException}) for its first {@code times} calls, then works on the
 * delegate. Proves "the guard never throws".
 */
final class ThrowingStore extends ForwardingStore {

    /** The operations that can be made to throw. */
    enum Op {
        CLAIM,
        CLAIM_ALL,
        COMPLETE,
        COMPLETE_ALL,
        RELEASE,
        EXTEND
    }

    private final Set<Op> failing;
    private final Throwable failure;
    private final AtomicInteger failuresLeft;
    final AtomicInteger extendCalls = new AtomicInteger();

    private ThrowingStore(IdempotencyStore delegate, Set<Op> failing, Throwable failure, int times) {
        super(delegate);
        this.failing = failing;
        this.failure = failure;
        this.failuresLeft = new AtomicInteger(times);
    }

    /** Every call of {@code op} throws {@code failure}. */
    static ThrowingStore failing(IdempotencyStore delegate, Op op, RuntimeException failure) {
        return new ThrowingStore(delegate, EnumSet.of(op), failure, Integer.MAX_VALUE);
    }

    /** The first {@code times} calls of {@code op} throw {@code failure}; later ones work. */
    static ThrowingStore failingFirst(IdempotencyStore delegate, Op op, RuntimeException failure, int times) {
        return new ThrowingStore(delegate, EnumSet.of(op), failure, times);
    }

    /** The first {@code times} calls of {@code op} throw {@code error} (a driver's assertion, a missing class). */
    static ThrowingStore erringFirst(IdempotencyStore delegate, Op op, Error error, int times) {
        return new ThrowingStore(delegate, EnumSet.of(op), error, times);
    }

    private void maybeThrow(Op op) {
        if (failing.contains(op) && failuresLeft.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            if (failure instanceof Error error) {
                throw error;
            }
            throw (RuntimeException) failure;
        }
    }

    @Override
    public ClaimResult claim(ClaimRequest request) {
        maybeThrow(Op.CLAIM);
        return delegate.claim(request);
    }

    @Override
    public List<ClaimResult> claimAll(List<ClaimRequest> requests) {
        maybeThrow(Op.CLAIM_ALL);
        return delegate.claimAll(requests);
    }

    @Override
    public UpdateResult complete(IdempotencyKey key, String owner, byte @Nullable [] result, Duration retention) {
        maybeThrow(Op.COMPLETE);
        return delegate.complete(key, owner, result, retention);
    }

    @Override
    public List<UpdateResult> completeAll(List<Completion> completions) {
        maybeThrow(Op.COMPLETE_ALL);
        return delegate.completeAll(completions);
    }

    @Override
    public UpdateResult release(IdempotencyKey key, String owner) {
        maybeThrow(Op.RELEASE);
        return delegate.release(key, owner);
    }

    @Override
    public UpdateResult extend(IdempotencyKey key, String owner, Duration lease) {
        extendCalls.incrementAndGet();
        maybeThrow(Op.EXTEND);
        return delegate.extend(key, owner, lease);
    }

    @Override
    public String describe() {
        return "throwing(" + delegate.describe() + ")";
    }
}
