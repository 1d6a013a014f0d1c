package dev.idem;

import dev.idem.internal.Sha256;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * Payload fingerprints. Stored with a key, a fingerprint lets the guard tell a real duplicate (same key, same
 * payload) from a key-reuse bug (same key, other payload: {@link Outcome.Type#REJECTED}).
 *
 * <p>A fingerprint is 1 to {@value #MAX_LENGTH} printable ASCII characters ({@code '!'} to {@code '~'}); {@link
 * #of(byte[])} gives 64. Guards check it once ({@link #problem(String)}), so every store can hold it.
 */
public final class Fingerprint {
    /** Longest fingerprint a guard accepts. */
    public static final int MAX_LENGTH = 128;

    private Fingerprint() {}

    /** SHA-256 of the payload bytes, in hex (64 characters). */
    public static String of(byte[] payload) {
        return Sha256.hex(payload);
    }

    /** SHA-256 of the payload's UTF-8 bytes, in hex (64 characters). */
    public static String of(String payload) {
        return of(payload.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Returns {@code fingerprint} (null stays null) when it is valid; otherwise throws a {@link DeadLetterException}
     * saying why ({@link #problem(String)}).
     */
    public static @Nullable String validate(@Nullable String fingerprint) {
        Optional<String> problem = problem(fingerprint);
        if (problem.isPresent()) {
            throw new DeadLetterException(problem.get(), null);
        }
        return fingerprint;
    }

    /**
     * Why {@code fingerprint} is not valid, or empty when it is (null is valid: no fingerprint). A guard answers
     * {@link Outcome.Type#REJECTED} with this reason.
     */
    public static Optional<String> problem(@Nullable String fingerprint) {
        if (fingerprint == null) {
            return Optional.empty();
        }
        if (fingerprint.isEmpty() || fingerprint.length() > MAX_LENGTH) {
            return Optional.of("fingerprint is " + fingerprint.length() + " characters long; it must be 1 to "
                    + MAX_LENGTH + ": pass Fingerprint.of(payload) (64 hex digits) or null");
        }
        for (int i = 0; i < fingerprint.length(); i++) {
            char c = fingerprint.charAt(i);
            if (c < '!' || c > '~') {
                return Optional.of("fingerprint holds a character that is not printable ASCII at index " + i
                        + ": pass Fingerprint.of(payload) (64 hex digits) or null");
            }
        }
        return Optional.empty();
    }
}
