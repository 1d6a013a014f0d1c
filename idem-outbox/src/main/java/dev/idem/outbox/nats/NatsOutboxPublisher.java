package dev.idem.outbox.nats;

import dev.idem.RetryPolicy;
import dev.idem.nats.NatsProducers;
import dev.idem.outbox.spi.OutboxPublisher;
import dev.idem.outbox.spi.OutboxRecord;
import dev.idem.outbox.spi.PublishRefusedException;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.Message;
import java.io.IOException;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * Publishes outbox records to NATS JetStream: subject = the record's destination, the message id in {@value
 * NatsProducers#MSG_ID} (the stream drops a republication within its duplicate window; the consumer's guard catches
 * the rest), the record's headers. Acknowledged by the stream's {@code PublishAck}. A {@link JetStreamApiException}
 * (no stream for the subject, a limit) is a refusal; an {@link IOException} (a timeout) is retried by the relay
 * without counting. Publishes synchronously, through {@link NatsProducers#publish}. Thread-safe.
 */
public final class NatsOutboxPublisher implements OutboxPublisher {
    private final JetStream jetStream;
    private final RetryPolicy retry;

    private NatsOutboxPublisher(JetStream jetStream, RetryPolicy retry) {
        this.jetStream = jetStream;
        this.retry = retry;
    }

    /** A publisher that publishes each record once per relay attempt (the relay retries). */
    public static NatsOutboxPublisher of(JetStream jetStream) {
        return new NatsOutboxPublisher(
                Objects.requireNonNull(jetStream, "jetStream"),
                RetryPolicy.builder().maxAttempts(1).build());
    }

    @Override
    public CompletableFuture<Void> publish(OutboxRecord record) {
        Message message = NatsProducers.message(record.destination(), record.messageId(), record.payload());
        record.headers().forEach((name, value) -> message.getHeaders().put(name, value));
        try {
            NatsProducers.publish(jetStream, message, retry);
            return CompletableFuture.completedFuture(null);
        } catch (JetStreamApiException e) {
            return CompletableFuture.failedFuture(new PublishRefusedException(
                    "JetStream refused " + record.messageId() + " on " + record.destination() + ": " + e.getMessage(),
                    e));
        } catch (IOException e) {
            return CompletableFuture.failedFuture(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return CompletableFuture.failedFuture(e);
        }
    }
}
