package dev.idem;

import dev.idem.internal.Sha256;
import java.nio.charset.StandardCharsets;

/**
 * Payload fingerprints. Stored with a key, a fingerprint lets the guard tell a real duplicate (same key, same
 * payload) from a key-reuse bug (same key, other payload: {@link Outcome.Type#REJECTED}).
 */
public final class Fingerprint {
    private Fingerprint() {}

    /** SHA-256 of the payload bytes, in hex (64 characters). */
    public static String of(byte[] payload) {
        return Sha256.hex(payload);
    }

    /** SHA-256 of the payload's UTF-8 bytes, in hex (64 characters). */
    public static String of(String payload) {
        return of(payload.getBytes(StandardCharsets.UTF_8));
    }
}
