package dev.idem.redis;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * How the store's values travel to and from Redis: UTF-8 strings, milliseconds, and optional values as {@code "-"}
 * (none) or {@code "+"} followed by the value (see {@link Script}).
 */
final class Codec {
    static final byte[] NONE = {'-'};

    private Codec() {}

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static byte[] millis(Instant t) {
        return utf8(Long.toString(t.toEpochMilli()));
    }

    static byte[] number(long n) {
        return utf8(Long.toString(n));
    }

    static byte[] optional(byte @Nullable [] value) {
        if (value == null) {
            return NONE;
        }
        byte[] out = new byte[value.length + 1];
        out[0] = '+';
        System.arraycopy(value, 0, out, 1, value.length);
        return out;
    }

    /** The value of an optional field: {@code null} for {@code "-"} or a missing field. */
    static byte @Nullable [] optionalBytes(@Nullable Object o) {
        if (!(o instanceof byte[] b) || b.length == 0 || b[0] != '+') {
            return null;
        }
        return Arrays.copyOfRange(b, 1, b.length);
    }

    static @Nullable String optionalText(@Nullable Object o) {
        byte[] b = optionalBytes(o);
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    static @Nullable Object at(List<Object> list, int i) {
        return i < list.size() ? list.get(i) : null;
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Object o) {
        return (List<Object>) o;
    }

    static String text(@Nullable Object o) {
        if (o instanceof byte[] b) {
            return new String(b, StandardCharsets.UTF_8);
        }
        throw new IllegalStateException("expected a string from Redis, got " + o);
    }

    static long number(@Nullable Object o) {
        if (o instanceof Long l) {
            return l;
        }
        return Long.parseLong(text(o));
    }

    static Instant instant(@Nullable Object o) {
        return Instant.ofEpochMilli(number(o));
    }
}
