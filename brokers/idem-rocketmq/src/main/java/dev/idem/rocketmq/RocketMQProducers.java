package dev.idem.rocketmq;

import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;

/**
 * Producer helpers: fix the idempotency key on a message <b>before the first send</b>, so that every resend carries
 * the same key, and the producer settings that go with a guarded consumer.
 *
 * <p>RocketMQ's client keeps a message's {@code UNIQ_KEY} (its msgId) across its own internal retries and when the
 * application sends the same {@code Message} object again, but a new {@code Message} object built for a resend gets
 * a new one, and the broker stores every copy it receives. A key stamped here (or a business key in {@code KEYS})
 * is the same on every copy, and the consumer's guard recognises them by it.
 */
public final class RocketMQProducers {
    /** The user property that carries the idempotency key; read it with {@code KeyExtractor.property(KEY_PROPERTY)}. */
    public static final String KEY_PROPERTY = "IDEM_KEY";

    private RocketMQProducers() {}

    /**
     * Stamps {@code key} (a business key such as {@code 10086:PAY}, or a generated message id) in {@value
     * #KEY_PROPERTY}. Idempotent: a message that already carries this key is returned as it is.
     *
     * @throws IllegalArgumentException if the key is blank, or the message already carries another key
     */
    public static <M extends Message> M withKey(M message, String key) {
        Objects.requireNonNull(key, "key");
        if (key.isBlank()) {
            throw new IllegalArgumentException("an idempotency key must not be blank");
        }
        String separator = PropertySeparatorCheck.problem("the idempotency key", key);
        if (separator != null) {
            throw new IllegalArgumentException(separator);
        }
        String existing = message.getUserProperty(KEY_PROPERTY);
        if (existing != null) {
            if (!existing.equals(key)) {
                throw new IllegalArgumentException("the message already carries another idempotency key in property '"
                        + KEY_PROPERTY + "': stamp a key once, before the first send");
            }
            return message;
        }
        message.putUserProperty(KEY_PROPERTY, key);
        return message;
    }

    /** Stamps a generated message id (a random UUID) as the key, unless the message already carries one. */
    public static <M extends Message> M withMessageId(M message) {
        if (message.getUserProperty(KEY_PROPERTY) != null) {
            return message;
        }
        return withKey(message, UUID.randomUUID().toString());
    }

    /** The key stamped on {@code message}, or empty. */
    public static Optional<String> key(Message message) {
        return Optional.ofNullable(message.getUserProperty(KEY_PROPERTY));
    }

    /**
     * Applies the settings recommended with a guarded consumer, before {@code producer.start()}: internal retries on
     * ({@code retryTimesWhenSendFailed=2}, {@code retryTimesWhenSendAsyncFailed=2}, {@code
     * retryAnotherBrokerWhenNotStoreOK=true}) so that a lost response is retried by the client instead of surfacing as
     * an error the application would answer with a new {@code Message} object; each attempt capped ({@code
     * sendMsgMaxTimeoutPerRequest=3000} ms within {@code sendMsgTimeout=10000} ms) so that a retry can follow a lost
     * response (without the cap, the first attempt spends the whole budget and no retry follows). The duplicates these retries may store carry the same key and msgId: the guard drops them.
     * It also refuses to send a message whose properties (its {@code KEYS}, a stamped key) hold U+0002,
     * RocketMQ's unescaped property separator: the consumer would read it cut short, two keys as one.
     */
    public static DefaultMQProducer applyRecommendedSettings(DefaultMQProducer producer) {
        producer.setRetryTimesWhenSendFailed(2);
        producer.setRetryTimesWhenSendAsyncFailed(2);
        producer.setRetryAnotherBrokerWhenNotStoreOK(true);
        producer.setSendMsgTimeout(10_000);
        producer.setSendMsgMaxTimeoutPerRequest(3000);
        producer.getDefaultMQProducerImpl().registerCheckForbiddenHook(new PropertySeparatorCheck());
        return producer;
    }
}
