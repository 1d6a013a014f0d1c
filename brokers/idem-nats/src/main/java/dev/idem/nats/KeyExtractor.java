package dev.idem.nats;

import io.nats.client.Message;
import java.util.Objects;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Where a message's idempotency key comes from. The key must be fixed by the producer before the first publish and
 * be the same on every resend: {@link #msgId()} (what {@link NatsProducers} stamps) or a business key of its own.
 * A message without a key is dead-lettered, never handled unguarded.
 */
public interface KeyExtractor {

    /** The key, or null / blank when the message has none. An exception dead-letters the message too. */
    @Nullable
    String extract(Message message) throws Exception;

    /** Where the key is read from, for dead-letter reasons. */
    String describe();

    /**
     * The {@value NatsProducers#MSG_ID} header, the id JetStream itself dedups publishes with. The default. A dead
     * letter an operator publishes back as it is keeps the original's key (its own {@value NatsProducers#MSG_ID}
     * names the dead letter; the original's is kept in {@value IdempotentNatsConsumer#DLQ_MSG_ID}).
     */
    static KeyExtractor msgId() {
        return of("header " + NatsProducers.MSG_ID, m -> {
            String id = HeaderKeys.messageId(m);
            return id == null ? null : HeaderKeys.decode(id);
        });
    }

    /**
     * The first value of header {@code name}, read exactly: a value {@code hex:...} carries bytes (as {@link
     * NatsProducers#message(String, byte[], byte[])} writes a key that is not printable ASCII), any other value is the
     * key; the bytes are read by {@link dev.idem.spi.KeyBytes#exactKey(byte[])}, the rule every Idem adapter follows.
     */
    static KeyExtractor header(String name) {
        Objects.requireNonNull(name, "name");
        return of("header " + name, m -> {
            String value = m.hasHeaders() ? m.getHeaders().getFirst(name) : null;
            return value == null ? null : HeaderKeys.decode(value);
        });
    }

    /** A key computed from the message, e.g. a business id inside the payload. */
    static KeyExtractor of(String description, Function<Message, @Nullable String> function) {
        Objects.requireNonNull(description, "description");
        Objects.requireNonNull(function, "function");
        return new KeyExtractor() {
            @Override
            public @Nullable String extract(Message message) {
                return function.apply(message);
            }

            @Override
            public String describe() {
                return description;
            }
        };
    }
}
