package dev.idem.spi;

import dev.idem.Fingerprint;
import dev.idem.IdempotencyKey;
import dev.idem.internal.LeaseBounds;
import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One claim: the key, the claiming owner's token (random, unique per handling; the same token when a claim is
 * retried), how long the lease lasts, and the payload fingerprint if any: 1 to {@value
 * dev.idem.Fingerprint#MAX_LENGTH} printable ASCII characters, the one rule every store holds ({@link
 * dev.idem.Fingerprint#problem(String)}; a guard answers {@code REJECTED} before it asks).
 *
 * <pre>{@code
 * ClaimRequest request = ClaimRequest.of(key, owner, Duration.ofSeconds(30)).withFingerprint(fingerprint);
 * }</pre>
 *
 * <p>Immutable and thread-safe.
 */
public final class ClaimRequest {
    /** The shortest lease: stores keep whole milliseconds, and a shorter one would end as it began. */
    public static final Duration SHORTEST_LEASE = Duration.ofMillis(1);

    /** The longest lease (and the longest setting a {@code Guard} takes), see {@link LeaseBounds}. */
    public static final Duration LONGEST_LEASE = Duration.ofDays(36_500);

    private final IdempotencyKey key;
    private final String owner;
    private final Duration lease;
    private final @Nullable String fingerprint;

    private ClaimRequest(IdempotencyKey key, String owner, Duration lease, @Nullable String fingerprint) {
        this.key = Objects.requireNonNull(key, "key");
        this.owner = Objects.requireNonNull(owner, "owner");
        this.lease = Objects.requireNonNull(lease, "lease");
        this.fingerprint = fingerprint;
        if (owner.isBlank() || owner.length() > 64) {
            throw new IllegalArgumentException("owner token must be 1 to 64 characters, got '" + owner + "'");
        }
        LeaseBounds.problem("lease", lease).ifPresent(problem -> {
            throw new IllegalArgumentException(problem);
        });
        Fingerprint.problem(fingerprint).ifPresent(problem -> {
            throw new IllegalArgumentException(problem);
        });
    }

    /** A claim without a fingerprint. */
    public static ClaimRequest of(IdempotencyKey key, String owner, Duration lease) {
        return new ClaimRequest(key, owner, lease, null);
    }

    /**
     * The same claim carrying {@code fingerprint} (or none, for null).
     *
     * @throws IllegalArgumentException when the fingerprint breaks {@link Fingerprint#problem(String)}'s rule
     */
    public ClaimRequest withFingerprint(@Nullable String fingerprint) {
        return new ClaimRequest(key, owner, lease, fingerprint);
    }

    public IdempotencyKey key() {
        return key;
    }

    public String owner() {
        return owner;
    }

    public @Nullable String fingerprint() {
        return fingerprint;
    }

    public Duration lease() {
        return lease;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ClaimRequest r
                && key.equals(r.key)
                && owner.equals(r.owner)
                && lease.equals(r.lease)
                && Objects.equals(fingerprint, r.fingerprint);
    }

    @Override
    public int hashCode() {
        return Objects.hash(key, owner, lease, fingerprint);
    }

    @Override
    public String toString() {
        return "ClaimRequest[" + key.logId() + ", owner=" + owner + ", lease=" + lease + "]";
    }
}
