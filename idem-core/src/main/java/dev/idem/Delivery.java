package dev.idem;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What one message brings to a guard: its idempotency key and, optionally, its payload fingerprint (see {@link
 * Fingerprint}).
 *
 * <p>A delivery holds the raw input as it came; the guard validates it. A bad key or a bad fingerprint ends in
 * {@link Outcome.Type#REJECTED} with the reason, never in an exception. Immutable and thread-safe. {@link #toString()}
 * never shows the key itself, only a hash of it.
 */
public final class Delivery {
    private final String key;
    private final @Nullable String fingerprint;

    private Delivery(String key, @Nullable String fingerprint) {
        this.key = Objects.requireNonNull(key, "key: pass the message's idempotency key, not null");
        this.fingerprint = fingerprint;
    }

    /** A delivery without a fingerprint: duplicates are recognised by key alone. */
    public static Delivery of(String key) {
        return new Delivery(key, null);
    }

    /** A delivery whose {@code fingerprint} (e.g. {@link Fingerprint#of(byte[])}) lets the guard detect key reuse. */
    public static Delivery of(String key, @Nullable String fingerprint) {
        return new Delivery(key, fingerprint);
    }

    /** The idempotency key as the message carried it. */
    public String key() {
        return key;
    }

    /** The payload fingerprint, or null. */
    public @Nullable String fingerprint() {
        return fingerprint;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Delivery d && key.equals(d.key) && Objects.equals(fingerprint, d.fingerprint);
    }

    @Override
    public int hashCode() {
        return Objects.hash(key, fingerprint);
    }

    @Override
    public String toString() {
        return "Delivery[key#" + Fingerprint.of(key).substring(0, 12) + (fingerprint == null ? "" : ", fingerprint")
                + "]";
    }
}
