package dev.idem.spi;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.jspecify.annotations.Nullable;

/**
 * Idempotency keys from bytes (a header, a record key, a property), exactly: two different byte strings never give
 * the same key. Every broker adapter reads key bytes through it.
 *
 * <p>Bytes that are valid UTF-8, hold no control character and do not start with {@value #BINARY_PREFIX} are the
 * key as text. Anything else is {@value #BINARY_PREFIX} followed by the bytes in lowercase hex: a text key that
 * starts with the prefix is written in hex too, so a text key can never equal the hex form of other bytes.
 *
 * <p>Where a broker hands keys over as text it decoded from UTF-8 (RocketMQ properties), {@link #exactText} gives the
 * same key as the bytes would, and refuses text in which the decoder replaced bytes that were not UTF-8.
 */
public final class KeyBytes {
    public static final String BINARY_PREFIX = "hex:";
    private static final char REPLACEMENT = '\uFFFD';

    private KeyBytes() {}

    /** The key that {@code bytes} stand for, exactly. */
    public static String exactKey(byte[] bytes) {
        String text = strictUtf8(bytes);
        if (text == null || text.startsWith(BINARY_PREFIX) || hasControl(text)) {
            return BINARY_PREFIX + HexFormat.of().formatHex(bytes);
        }
        return text;
    }

    /**
     * The key that {@code text}, decoded from UTF-8 by a broker or its client, stands for: the key {@link #exactKey}
     * gives for its UTF-8 bytes.
     *
     * @throws IllegalArgumentException if {@code text} holds U+FFFD, what a decoder puts for bytes that were not UTF-8:
     *     keys whose bytes differed only there arrive equal, so the key is not exact
     */
    public static String exactText(String text) {
        if (text.indexOf(REPLACEMENT) >= 0) {
            throw new IllegalArgumentException("the key holds U+FFFD, what a UTF-8 decoder puts for bytes that are not"
                    + " UTF-8: two keys differing only in those bytes would be taken for one; the producer must send"
                    + " keys as UTF-8 text");
        }
        return exactKey(text.getBytes(StandardCharsets.UTF_8));
    }

    private static @Nullable String strictUtf8(byte[] bytes) {
        try {
            return StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes))
                    .toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    private static boolean hasControl(String text) {
        for (int i = 0; i < text.length(); i++) {
            if (Character.isISOControl(text.charAt(i))) {
                return true;
            }
        }
        return false;
    }
}
