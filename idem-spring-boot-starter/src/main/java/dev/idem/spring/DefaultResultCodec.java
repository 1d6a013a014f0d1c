package dev.idem.spring;

import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/** Stores {@code String} results as UTF-8 and {@code byte[]} results as they are; {@code void} stores nothing. */
final class DefaultResultCodec implements ResultCodec {

    @Override
    public boolean supports(Class<?> type) {
        return type == void.class || type == Void.class || type == String.class || type == byte[].class;
    }

    @Override
    public byte @Nullable [] encode(@Nullable Object value) {
        if (value instanceof String s) {
            return s.getBytes(StandardCharsets.UTF_8);
        }
        if (value instanceof byte[] b) {
            return b;
        }
        return null;
    }

    @Override
    public @Nullable Object decode(byte @Nullable [] stored, Class<?> type) {
        if (stored == null || type == void.class || type == Void.class) {
            return null;
        }
        return type == String.class ? new String(stored, StandardCharsets.UTF_8) : stored;
    }
}
