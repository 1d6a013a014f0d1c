package dev.idem.outbox;

import dev.idem.kafka.KafkaProducers;
import dev.idem.nats.NatsProducers;
import dev.idem.rocketmq.RocketMQProducers;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * A message to send through the outbox: where to, its ordering key, its body and headers, and optionally its message
 * id (by default the outbox issues one at insert). Immutable.
 *
 * <pre>{@code
 * OutboxMessage.to("payments").key(orderId).header("type", "PaymentCompleted").payload(json)
 * }</pre>
 */
public final class OutboxMessage {
    /** Header names: what every broker accepts as a header name. */
    private static final Pattern HEADER_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");

    static final int MAX_TEXT = 255;

    /** Where the publishers carry the message id (constants: inlined, so the broker modules stay optional). */
    private static final List<String> MESSAGE_ID_HEADERS =
            List.of(KafkaProducers.KEY_HEADER, NatsProducers.MSG_ID, RocketMQProducers.KEY_PROPERTY);

    private final String destination;
    private final String key;
    private final byte[] payload;
    private final Map<String, String> headers;
    private final @Nullable String messageId;

    private OutboxMessage(
            String destination, String key, byte[] payload, Map<String, String> headers, @Nullable String id) {
        this.destination = destination;
        this.key = key;
        this.payload = payload;
        this.headers = headers;
        this.messageId = id;
    }

    /** Starts a message for {@code destination} (a Kafka topic, a RabbitMQ routing key, a JetStream subject). */
    public static Draft to(String destination) {
        return new Draft(text("destination", destination));
    }

    public String destination() {
        return destination;
    }

    public String key() {
        return key;
    }

    public byte[] payload() {
        return payload.clone();
    }

    byte[] payloadUnsafe() {
        return payload;
    }

    public Map<String, String> headers() {
        return headers;
    }

    /** The message id given with {@link #withMessageId}, or empty: then the outbox issues one at insert. */
    public Optional<String> messageId() {
        return Optional.ofNullable(messageId);
    }

    /**
     * This message with a message id of your own (a business key such as {@code 10086:PAID}), fixed before the
     * insert; it must be unique in the outbox table and printable ASCII without spaces (every broker's header).
     */
    public OutboxMessage withMessageId(String id) {
        return new OutboxMessage(destination, key, payload, headers, messageId(id));
    }

    static String messageId(String id) {
        text("message id", id);
        for (int i = 0; i < id.length(); i++) {
            char c = id.charAt(i);
            if (c < 0x21 || c > 0x7e) {
                throw new IllegalArgumentException("a message id must be printable ASCII without spaces (it travels in"
                        + " a header); got character 0x" + Integer.toHexString(c) + " at " + i + " in '" + id + "'");
            }
        }
        return id;
    }

    private static String text(String what, String value) {
        Objects.requireNonNull(value, what);
        if (value.isBlank()) {
            throw new IllegalArgumentException("the " + what + " must not be blank");
        }
        if (value.length() > MAX_TEXT) {
            throw new IllegalArgumentException(
                    "the " + what + " has " + value.length() + " characters; at most " + MAX_TEXT + " fit the column");
        }
        return value;
    }

    @Override
    public String toString() {
        return "OutboxMessage[to " + destination + ", key " + key + (messageId == null ? "" : ", id " + messageId)
                + ", " + payload.length + " bytes]";
    }

    /** A message being built: the key and the payload are required, headers are optional. */
    public static final class Draft {
        private final String destination;
        private @Nullable String key;
        private final Map<String, String> headers = new LinkedHashMap<>();

        private Draft(String destination) {
            this.destination = destination;
        }

        /**
         * The ordering key: messages of one key are published in the order they were inserted (see docs/outbox.md),
         * and it is the broker's message key (Kafka's record key). E.g. the order id.
         */
        public Draft key(String key) {
            this.key = text("key", key);
            return this;
        }

        /** An application header, published with the message; not one where the message id travels (idem-key, Nats-Msg-Id). */
        public Draft header(String name, String value) {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(value, "value");
            if (!HEADER_NAME.matcher(name).matches()) {
                throw new IllegalArgumentException("header name '" + name + "' is not allowed: use 1 to 128 characters"
                        + " of [A-Za-z0-9._-], starting with a letter or digit");
            }
            for (String idHeader : MESSAGE_ID_HEADERS) {
                if (idHeader.equalsIgnoreCase(name)) {
                    throw new IllegalArgumentException("header '" + name + "' is where the publishers carry the"
                            + " outbox's message id: a copied id (the incoming message's) would replace it, and two"
                            + " messages sent with one would be taken for one. Leave it out; to fix the id yourself,"
                            + " use withMessageId(...)");
                }
            }
            headers.put(name, value);
            return this;
        }

        /** Finishes the message with {@code payload} as its body. */
        public OutboxMessage payload(byte[] payload) {
            Objects.requireNonNull(payload, "payload");
            if (key == null) {
                throw new IllegalStateException("set the message's key(...) before its payload: it orders the messages"
                        + " of one entity and keys them at the broker");
            }
            return new OutboxMessage(destination, key, payload.clone(), Map.copyOf(headers), null);
        }

        /** Finishes the message with {@code payload} (UTF-8) as its body. */
        public OutboxMessage payload(String payload) {
            return payload(payload.getBytes(StandardCharsets.UTF_8));
        }
    }
}
