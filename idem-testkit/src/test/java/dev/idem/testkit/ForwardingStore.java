package dev.idem.testkit;

import dev.idem.IdempotencyKey;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.Completion;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.StoredRecord;
import dev.idem.spi.UpdateResult;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/** A store that forwards every call to another: the tests' stores override only the calls they change or count. */
abstract class ForwardingStore implements IdempotencyStore {
    protected final IdempotencyStore delegate;

    protected ForwardingStore(IdempotencyStore delegate) {
        this.delegate = delegate;
    }

    @Override
    public ClaimResult claim(ClaimRequest request) {
        return delegate.claim(request);
    }

    @Override
    public List<ClaimResult> claimAll(List<ClaimRequest> requests) {
        return delegate.claimAll(requests);
    }

    @Override
    public UpdateResult complete(IdempotencyKey key, String owner, byte @Nullable [] result, Duration retention) {
        return delegate.complete(key, owner, result, retention);
    }

    @Override
    public List<UpdateResult> completeAll(List<Completion> completions) {
        return delegate.completeAll(completions);
    }

    @Override
    public UpdateResult release(IdempotencyKey key, String owner) {
        return delegate.release(key, owner);
    }

    @Override
    public UpdateResult extend(IdempotencyKey key, String owner, Duration lease) {
        return delegate.extend(key, owner, lease);
    }

    @Override
    public Optional<StoredRecord> lookup(IdempotencyKey key) {
        return delegate.lookup(key);
    }

    @Override
    public String describe() {
        return delegate.describe();
    }

    @Override
    public void close() {
        delegate.close();
    }
}
