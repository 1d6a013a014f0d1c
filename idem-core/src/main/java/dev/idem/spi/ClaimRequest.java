package dev.idem.spi;

import dev.idem.IdempotencyKey;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One claim: the key, the claiming owner's token (random, unique per handling; the same token when a claim is
 * retried), the payload fingerprint if any, and how long the lease lasts.
 */
public record ClaimRequest(
        IdempotencyKey key, String owner, @Nullable String fingerprint, Duration lease) {
    public ClaimRequest {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(owner, "owner");
        Objects.requireNonNull(lease, "lease");
        if (owner.isBlank() || owner.length() > 64) {
            throw new IllegalArgumentException("owner token must be 1 to 64 characters, got '" + owner + "'");
        }
        if (lease.isNegative() || lease.isZero()) {
            throw new IllegalArgumentException("lease must be positive, got " + lease);
        }
    }
}
