package dev.idem.spi;

import java.time.Instant;
import java.util.Arrays;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/** The answer to a claim. Exactly one of four. */
public sealed interface ClaimResult {

    /** The caller now holds the key: run the handler, then complete or release. */
    sealed interface Acquired extends ClaimResult {
        String owner();

        /** Grows with every claim or takeover of a namespace; pass it to downstream writes to fence stale owners. */
        long fencingToken();

        Instant leaseUntil();
    }

    /** A fresh claim (or the same owner's retried claim). */
    record Claimed(String owner, long fencingToken, Instant leaseUntil) implements Acquired {}

    /** An expired lease of {@code previousOwner} was taken over: that owner may have run part of the handler. */
    record TakenOver(String owner, long fencingToken, Instant leaseUntil, String previousOwner) implements Acquired {}

    /** Another owner holds the key until {@code leaseUntil}. */
    record InProgress(
            String owner, Instant leaseUntil, @Nullable String fingerprint) implements ClaimResult {}

    /** The key was completed at {@code completedAt}; the record lives until {@code expiresAt}. */
    record Done(
            Instant completedAt,
            Instant expiresAt,
            @Nullable String fingerprint,
            byte @Nullable [] result) implements ClaimResult {
        public Done {
            result = result == null ? null : result.clone();
        }

        @Override
        public byte @Nullable [] result() {
            return result == null ? null : result.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Done d
                    && completedAt.equals(d.completedAt)
                    && expiresAt.equals(d.expiresAt)
                    && Objects.equals(fingerprint, d.fingerprint)
                    && Arrays.equals(result, d.result);
        }

        @Override
        public int hashCode() {
            return Objects.hash(completedAt, expiresAt, fingerprint, Arrays.hashCode(result));
        }

        @Override
        public String toString() {
            return "Done[completedAt=" + completedAt + ", expiresAt=" + expiresAt + ", fingerprint=" + fingerprint
                    + ", result=" + (result == null ? "none" : result.length + " bytes") + "]";
        }
    }
}
