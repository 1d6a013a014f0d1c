package dev.idem.kafka;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.jspecify.annotations.Nullable;

/**
 * Idempotency keys from bytes, exactly: two different byte strings never give the same key.
 *
 * <p>Bytes that are valid UTF-8, hold no control character and do not start with {@value #BINARY_PREFIX} are the
 * key as text. Anything else is {@value #BINARY_PREFIX} followed by the bytes in lowercase hex: a text key that
 * starts with the prefix is written in hex too, so a text key can never equal the hex form of other bytes.
 */
final class ExactKeys {
    static final String BINARY_PREFIX = "hex:";

    private ExactKeys() {}

    static String fromBytes(byte[] bytes) {
        String text = strictUtf8(bytes);
        if (text == null || text.startsWith(BINARY_PREFIX) || hasControl(text)) {
            return BINARY_PREFIX + HexFormat.of().formatHex(bytes);
        }
        return text;
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
