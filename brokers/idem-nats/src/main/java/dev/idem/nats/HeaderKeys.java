package dev.idem.nats;

import dev.idem.spi.KeyBytes;
import io.nats.client.Message;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import org.jspecify.annotations.Nullable;

/**
 * How key bytes travel in a NATS header, exactly. jnats carries header values as printable ASCII only (it refuses
 * anything else, in both directions), so a key that is printable ASCII without spaces and does not start with {@value
 * KeyBytes#BINARY_PREFIX} travels as itself, and any other key as {@value KeyBytes#BINARY_PREFIX} followed by its
 * bytes in hex. Reading undoes that and hands the bytes to {@link KeyBytes#exactKey(byte[])}, the rule every Idem
 * adapter reads keys with: the same bytes give the same key on every broker, and two different byte strings never give
 * one key. Spaces travel in hex too (a header parser may trim them).
 */
final class HeaderKeys {
    /** The prefix of the dead letters' own {@value NatsProducers#MSG_ID}. */
    static final String DEAD_LETTER_ID_PREFIX = "idem-dlq:";

    private HeaderKeys() {}

    /** The header value that carries {@code key}. */
    static String encode(byte[] key) {
        String text = new String(key, StandardCharsets.US_ASCII);
        if (isPrintableAscii(key) && !text.startsWith(KeyBytes.BINARY_PREFIX)) {
            return text;
        }
        return KeyBytes.BINARY_PREFIX + HexFormat.of().formatHex(key);
    }

    /**
     * The key a header value carries. Only the value {@link #encode} writes for some bytes is read as those bytes; any
     * other value is text, also one another producer wrote with the prefix ({@code hex:AB}, {@code hex:61}): read as
     * bytes, it would be the key of a different id ({@code hex:ab}, {@code a}) and be answered DUPLICATE.
     */
    static String decode(String value) {
        byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        if (value.startsWith(KeyBytes.BINARY_PREFIX)) {
            try {
                byte[] carried = HexFormat.of().parseHex(value.substring(KeyBytes.BINARY_PREFIX.length()));
                if (encode(carried).equals(value)) {
                    bytes = carried;
                }
            } catch (IllegalArgumentException notHex) {
                // text that happens to start with the prefix
            }
        }
        return KeyBytes.exactKey(bytes);
    }

    /**
     * The message's id as its producer stamped it: its {@value NatsProducers#MSG_ID}; on a dead letter an operator
     * published back (its {@value NatsProducers#MSG_ID} is the dead letter's own, {@value #DEAD_LETTER_ID_PREFIX}...),
     * the original's, kept in {@value IdempotentNatsConsumer#DLQ_MSG_ID}. Null when there is none.
     */
    static @Nullable String messageId(Message message) {
        if (!message.hasHeaders()) {
            return null;
        }
        String id = message.getHeaders().getFirst(NatsProducers.MSG_ID);
        if (id != null && id.startsWith(DEAD_LETTER_ID_PREFIX)) {
            return message.getHeaders().getFirst(IdempotentNatsConsumer.DLQ_MSG_ID);
        }
        return id;
    }

    private static boolean isPrintableAscii(byte[] bytes) {
        for (byte b : bytes) {
            if (b < 0x21 || b > 0x7e) {
                return false;
            }
        }
        return bytes.length > 0;
    }
}
