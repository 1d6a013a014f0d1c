package dev.idem.spi;

import dev.idem.IdempotencyKey;
import java.time.Instant;
import java.util.Arrays;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A record as a store holds it. For {@link State#PROCESSING}, {@code expiresAt} is the lease deadline; for
 * {@link State#DONE}, the end of the retention window.
 */
public record StoredRecord(
        IdempotencyKey key,
        State state,
        String owner,
        long fencingToken,
        Instant expiresAt,
        @Nullable String fingerprint,
        byte @Nullable [] result) {

    public enum State {
        PROCESSING,
        DONE
    }

    public StoredRecord {
        result = result == null ? null : result.clone();
    }

    @Override
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
}
