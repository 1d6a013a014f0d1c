package dev.idem.spring;

import org.jspecify.annotations.Nullable;

/**
 * Turns what an {@link Idempotent} method returns into the bytes stored with its key, and back for a duplicate.
 * Declare a bean of this type for return types beyond {@code void}, {@code String} and {@code byte[]} (e.g. JSON
 * through your {@code ObjectMapper}); it must be thread-safe.
 */
public interface ResultCodec {

    /** True when this codec can store values of {@code type}. */
    boolean supports(Class<?> type);

    /** The bytes to store for {@code value} (null for none). */
    byte @Nullable [] encode(@Nullable Object value);

    /** The value a duplicate returns, from the stored bytes (null when none were stored). */
    @Nullable
    Object decode(byte @Nullable [] stored, Class<?> type);
}
