package dev.idem.rocketmq;

import java.util.Objects;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.jspecify.annotations.Nullable;

/**
 * Reads the idempotency key of a message. A {@code null} or blank key, or an exception thrown here, makes the message
 * {@code REJECTED} (dead-lettered with the reason): a message is never handled without a key. The key is taken as
 * {@link dev.idem.spi.KeyBytes#exactText} gives it: a key holding U+FFFD (a producer's bytes that were not UTF-8, which
 * RocketMQ decodes into it) is {@code REJECTED} too, as two such keys would be taken for one.
 *
 * <p>Which source is safe is in {@code docs/rocketmq.md}: a business key ({@link #keys()}) or a key the producer
 * stamped ({@link #property(String)} with {@link RocketMQProducers#KEY_PROPERTY}) survive every resend; {@link
 * #uniqueKey()} survives the client's internal retries and resends of the same {@code Message} object only.
 */
@FunctionalInterface
public interface KeyExtractor {

    @Nullable
    String extract(MessageExt message) throws Exception;

    /** What the extractor reads, for the dead-letter reason (e.g. {@code property 'IDEM_KEY'}). */
    default String describe() {
        return "the key extractor";
    }

    /**
     * The message's {@code KEYS} (set with {@code Message.setKeys}): put exactly one business key there, e.g. {@code
     * 10086:PAY}. RocketMQ separates keys with spaces; a message with several is refused ({@code REJECTED}, dead-lettered
     * with the reason), as nothing says which of them is the idempotency key, nor that a resend lists them in the same
     * order.
     */
    static KeyExtractor keys() {
        return new KeyExtractor() {
            @Override
            public @Nullable String extract(MessageExt message) {
                String keys = message.getKeys();
                if (keys == null || keys.isBlank()) {
                    return null;
                }
                String[] each = keys.trim().split(MessageConst.KEY_SEPARATOR + "+");
                if (each.length > 1) {
                    throw new IllegalArgumentException("the message has " + each.length + " keys (" + keys.trim()
                            + "); the producer must set one business key in KEYS, or carry the key in a user property"
                            + " read with KeyExtractor.property(name)");
                }
                return each[0];
            }

            @Override
            public String describe() {
                return "the message KEYS";
            }
        };
    }

    /** The user property {@code name}; the producer stamps {@link RocketMQProducers#KEY_PROPERTY} with it. */
    static KeyExtractor property(String name) {
        Objects.requireNonNull(name, "name");
        return new KeyExtractor() {
            @Override
            public @Nullable String extract(MessageExt message) {
                return message.getUserProperty(name);
            }

            @Override
            public String describe() {
                return "property '" + name + "'";
            }
        };
    }

    /**
     * The producer client's {@code UNIQ_KEY} (what {@code getMsgId()} returns when it is set). It is read from the
     * property itself: {@code getMsgId()} falls back to the broker's per-copy offset id, which is never a safe key.
     * Safe only against the client's internal retries and resends of the same {@code Message} object: a new {@code
     * Message} object gets a new {@code UNIQ_KEY}.
     */
    static KeyExtractor uniqueKey() {
        return new KeyExtractor() {
            @Override
            public @Nullable String extract(MessageExt message) {
                return message.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
            }

            @Override
            public String describe() {
                return "the producer's UNIQ_KEY";
            }
        };
    }
}
