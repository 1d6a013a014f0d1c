package dev.idem.rabbitmq;

import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.LongString;
import dev.idem.spi.KeyBytes;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Reads the idempotency key of a message. A {@code null} or blank key, or an exception thrown here, makes the message
 * {@code REJECTED} (dead-lettered with the reason): a message is never handled without a key.
 */
@FunctionalInterface
public interface KeyExtractor {

    @Nullable
    String extract(Delivery message) throws Exception;

    /** What the extractor reads, for the dead-letter reason (e.g. {@code header 'idem-key'}). */
    default String describe() {
        return "the key extractor";
    }

    /**
     * The AMQP {@code message-id} property, which {@link RabbitPublisher} sets before the first publish, read as {@link
     * KeyBytes#exactKey} reads its UTF-8 bytes. amqp-client decodes the property as UTF-8 and replaces bytes that are
     * not with U+FFFD, which would make different ids one key: an id holding U+FFFD is refused (the message is
     * dead-lettered with the reason). So is a {@code String} header value holding it.
     */
    static KeyExtractor messageId() {
        return new KeyExtractor() {
            @Override
            public @Nullable String extract(Delivery message) {
                String id = message.getProperties().getMessageId();
                if (id == null) {
                    return null;
                }
                return decodedText(id, "the message-id");
            }

            @Override
            public String describe() {
                return "the message-id property";
            }
        };
    }

    /**
     * The header {@code name}: bytes (a byte array, a long string) read exactly by {@link KeyBytes#exactKey} (two
     * different byte strings are never one key), an integer or decimal number in decimal. A header of another type
     * (a boolean, a timestamp, a table, an array) is refused: the message is dead-lettered with the reason.
     */
    static KeyExtractor header(String name) {
        Objects.requireNonNull(name, "name");
        return new KeyExtractor() {
            @Override
            public @Nullable String extract(Delivery message) {
                Map<String, Object> headers = message.getProperties().getHeaders();
                Object value = headers == null ? null : headers.get(name);
                if (value == null) {
                    return null;
                }
                if (value instanceof byte[] bytes) {
                    return KeyBytes.exactKey(bytes);
                }
                if (value instanceof LongString text) {
                    return KeyBytes.exactKey(text.getBytes());
                }
                if (value instanceof String text) { // decoded already, e.g. by a container's message converter
                    return decodedText(text, "header '" + name + "'");
                }
                if (value instanceof Number number) {
                    return number.toString();
                }
                throw new IllegalArgumentException("header '" + name + "' holds a "
                        + value.getClass().getName() + "; a key header must be a string, a byte array or a number");
            }

            @Override
            public String describe() {
                return "header '" + name + "'";
            }
        };
    }

    /**
     * The key of text someone decoded from bytes as UTF-8: U+FFFD stands for bytes that were not UTF-8, so two different
     * byte strings may have become this one text; it is refused rather than read as another message's key.
     */
    private static String decodedText(String text, String what) {
        if (text.indexOf('\uFFFD') >= 0) {
            throw new IllegalArgumentException(what + " is not valid UTF-8 (it was decoded with U+FFFD for bytes"
                    + " that are not), so different keys could read as one; publish UTF-8 keys, or carry the key's"
                    + " bytes in a byte-array or long-string header and read it with KeyExtractor.header(name)");
        }
        return KeyBytes.exactKey(text.getBytes(StandardCharsets.UTF_8));
    }

    /** A business key computed from the body, e.g. {@code body -> parse(body).orderId() + ":PAY"}. */
    static KeyExtractor body(Function<byte[], @Nullable String> function) {
        Objects.requireNonNull(function, "function");
        return new KeyExtractor() {
            @Override
            public @Nullable String extract(Delivery message) {
                return function.apply(message.getBody());
            }

            @Override
            public String describe() {
                return "a function of the body";
            }
        };
    }
}
