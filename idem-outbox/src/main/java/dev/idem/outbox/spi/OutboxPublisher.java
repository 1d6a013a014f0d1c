package dev.idem.outbox.spi;

import java.util.concurrent.CompletableFuture;

/**
 * Publishes outbox records to one broker. The relay calls {@link #publish} for at most one record per key at a time
 * (the next record of a key only after the previous one was acknowledged), and many keys at once.
 *
 * <p>The returned stage completes normally once the broker has durably accepted the record (Kafka {@code acks=all},
 * a RabbitMQ publisher confirm, a JetStream {@code PublishAck}); exceptionally with {@link PublishRefusedException}
 * when the broker refused this record (it would refuse it again: too large, no such destination, not authorised),
 * which counts towards parking it; exceptionally with anything else (a timeout, a lost connection) when the broker may
 * come back, which is retried with backoff and never parks the record.
 *
 * <p>Implementations must be thread-safe and must carry {@link OutboxRecord#messageId()} as the message's idempotency
 * key, so that a republication after a relay crash is recognised downstream.
 */
public interface OutboxPublisher {
    CompletableFuture<Void> publish(OutboxRecord record);
}
