package dev.idem.spi;

import dev.idem.IdempotencyKey;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One completion of a batch ({@link IdempotencyStore#completeAll}): the arguments of {@link
 * IdempotencyStore#complete} as a value. Immutable and thread-safe.
 */
public final class Completion {
    private final IdempotencyKey key;
    private final String owner;
    private final byte @Nullable [] result;
    private final Duration retention;

    private Completion(IdempotencyKey key, String owner, byte @Nullable [] result, Duration retention) {
        this.key = Objects.requireNonNull(key, "key");
        this.owner = Objects.requireNonNull(owner, "owner");
        this.result = result == null ? null : result.clone();
        this.retention = Objects.requireNonNull(retention, "retention");
    }

    public static Completion of(IdempotencyKey key, String owner, byte @Nullable [] result, Duration retention) {
        return new Completion(key, owner, result, retention);
    }

    public IdempotencyKey key() {
        return key;
    }

    public String owner() {
        return owner;
    }

    public byte @Nullable [] result() {
        return result == null ? null : result.clone();
    }

    public Duration retention() {
        return retention;
    }

    @Override
    public String toString() {
        return "Completion[" + key.logId() + ", owner=" + owner + "]";
    }
}
