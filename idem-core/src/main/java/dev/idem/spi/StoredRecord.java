package dev.idem.spi;

import dev.idem.IdempotencyKey;
import java.time.Instant;
import java.util.Arrays;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A record as a store holds it. For {@link State#PROCESSING}, {@code expiresAt} is the lease deadline; for {@link
 * State#DONE}, the end of the retention window.
 *
 * <pre>{@code
 * StoredRecord.builder(key, State.PROCESSING).owner(owner).fencingToken(7).expiresAt(leaseUntil).build();
 * }</pre>
 *
 * <p>Immutable and thread-safe.
 */
public final class StoredRecord {

    public enum State {
        PROCESSING,
        DONE
    }

    private final IdempotencyKey key;
    private final State state;
    private final String owner;
    private final long fencingToken;
    private final Instant expiresAt;
    private final @Nullable String fingerprint;
    private final byte @Nullable [] result;

    private StoredRecord(Builder b) {
        this.key = b.key;
        this.state = b.state;
        this.owner = Objects.requireNonNull(b.owner, "owner: set it on the builder");
        this.fencingToken = b.fencingToken;
        this.expiresAt = Objects.requireNonNull(b.expiresAt, "expiresAt: set it on the builder");
        this.fingerprint = b.fingerprint;
        this.result = b.result == null ? null : b.result.clone();
    }

    /** Starts a record of {@code key} in {@code state}; {@code owner} and {@code expiresAt} are required. */
    public static Builder builder(IdempotencyKey key, State state) {
        return new Builder(key, state);
    }

    public IdempotencyKey key() {
        return key;
    }

    public State state() {
        return state;
    }

    public String owner() {
        return owner;
    }

    public long fencingToken() {
        return fencingToken;
    }

    public Instant expiresAt() {
        return expiresAt;
    }

    public @Nullable String fingerprint() {
        return fingerprint;
    }

    public byte @Nullable [] result() {
        return result == null ? null : result.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof StoredRecord r
                && key.equals(r.key)
                && state == r.state
                && owner.equals(r.owner)
                && fencingToken == r.fencingToken
                && expiresAt.equals(r.expiresAt)
                && Objects.equals(fingerprint, r.fingerprint)
                && Arrays.equals(result, r.result);
    }

    @Override
    public int hashCode() {
        return Objects.hash(key, state, owner, fencingToken, expiresAt, fingerprint, Arrays.hashCode(result));
    }

    @Override
    public String toString() {
        return "StoredRecord[" + key.logId() + ", " + state + ", owner=" + owner + ", fencingToken=" + fencingToken
                + ", expiresAt=" + expiresAt + "]";
    }

    /** Builds a {@link StoredRecord}. */
    public static final class Builder {
        private final IdempotencyKey key;
        private final State state;
        private @Nullable String owner;
        private long fencingToken;
        private @Nullable Instant expiresAt;
        private @Nullable String fingerprint;
        private byte @Nullable [] result;

        private Builder(IdempotencyKey key, State state) {
            this.key = Objects.requireNonNull(key, "key");
            this.state = Objects.requireNonNull(state, "state");
        }

        public Builder owner(String owner) {
            this.owner = Objects.requireNonNull(owner, "owner");
            return this;
        }

        public Builder fencingToken(long fencingToken) {
            this.fencingToken = fencingToken;
            return this;
        }

        public Builder expiresAt(Instant expiresAt) {
            this.expiresAt = Objects.requireNonNull(expiresAt, "expiresAt");
            return this;
        }

        public Builder fingerprint(@Nullable String fingerprint) {
            this.fingerprint = fingerprint;
            return this;
        }

        public Builder result(byte @Nullable [] result) {
            this.result = result == null ? null : result.clone();
            return this;
        }

        public StoredRecord build() {
            return new StoredRecord(this);
        }
    }
}
