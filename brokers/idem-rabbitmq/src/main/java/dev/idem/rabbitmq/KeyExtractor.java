package dev.idem.rabbitmq;

import com.rabbitmq.client.Delivery;
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

    /** The AMQP {@code message-id} property, which {@link RabbitPublisher} sets before the first publish. */
    static KeyExtractor messageId() {
        return new KeyExtractor() {
            @Override
            public @Nullable String extract(Delivery message) {
                return message.getProperties().getMessageId();
            }

            @Override
            public String describe() {
                return "the message-id property";
            }
        };
    }

    /** The header {@code name}, as text (long strings and byte arrays read as UTF-8, numbers in decimal). */
    static KeyExtractor header(String name) {
        Objects.requireNonNull(name, "name");
        return new KeyExtractor() {
            @Override
            public @Nullable String extract(Delivery message) {
                Map<String, Object> headers = message.getProperties().getHeaders();
                Object value = headers == null ? null : headers.get(name);
                if (value instanceof byte[] bytes) {
                    return new String(bytes, StandardCharsets.UTF_8);
                }
                return value == null ? null : value.toString();
            }

            @Override
            public String describe() {
                return "header '" + name + "'";
            }
        };
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
