package dev.idem.outbox.spi;

import java.time.Instant;
import java.util.Map;
import java.util.Objects;

/**
 * A committed outbox message as the relay hands it to a publisher. {@code messageId} is fixed at insert and is the
 * same on every republication: the publisher puts it where the next service's guard reads its idempotency key.
 *
 * @param position the row's insertion order; each key's messages are published in this order
 * @param messageId the stable message id (the idempotency key downstream)
 * @param destination the topic, routing key or subject
 * @param key the ordering key (also the broker's message key, e.g. Kafka's record key)
 * @param headers application headers, published as they were sent
 * @param payload the body
 * @param createdAt when {@code Outbox.send} inserted it
 */
public record OutboxRecord(
        long position,
        String messageId,
        String destination,
        String key,
        Map<String, String> headers,
        byte[] payload,
        Instant createdAt) {
    public OutboxRecord {
        Objects.requireNonNull(messageId, "messageId");
        Objects.requireNonNull(destination, "destination");
        Objects.requireNonNull(key, "key");
        headers = Map.copyOf(headers);
        Objects.requireNonNull(payload, "payload");
        Objects.requireNonNull(createdAt, "createdAt");
    }

    @Override
    public String toString() {
        return "OutboxRecord[" + messageId + " to " + destination + ", key " + key + ", position " + position + "]";
    }
}
