package dev.idem.outbox.rabbitmq;

import com.rabbitmq.client.AMQP;
import dev.idem.RetryLaterException;
import dev.idem.outbox.spi.OutboxPublisher;
import dev.idem.outbox.spi.OutboxRecord;
import dev.idem.outbox.spi.PublishRefusedException;
import dev.idem.rabbitmq.RabbitPublisher;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * Publishes outbox records to RabbitMQ through a confirming {@link RabbitPublisher}: to {@code exchange} with the
 * record's destination as the routing key (with the default exchange {@code ""}, the destination is the queue), the
 * message id in the AMQP {@code message-id} property (read it with {@code KeyExtractor.messageId()}), the record's
 * headers, persistent. Acknowledged by the publisher confirm. A message the broker returns as unroutable is a refusal;
 * an unconfirmed publish is retried by the relay without counting. Publishes synchronously (the RabbitPublisher awaits
 * one confirm at a time). Does not own the RabbitPublisher.
 */
public final class RabbitOutboxPublisher implements OutboxPublisher {
    private final RabbitPublisher publisher;
    private final String exchange;

    private RabbitOutboxPublisher(RabbitPublisher publisher, String exchange) {
        this.publisher = publisher;
        this.exchange = exchange;
    }

    /** Publishes to {@code exchange}, routing key = the record's destination. */
    public static RabbitOutboxPublisher of(RabbitPublisher publisher, String exchange) {
        return new RabbitOutboxPublisher(
                Objects.requireNonNull(publisher, "publisher"), Objects.requireNonNull(exchange, "exchange"));
    }

    @Override
    public CompletableFuture<Void> publish(OutboxRecord record) {
        Map<String, Object> headers = new HashMap<>(record.headers());
        AMQP.BasicProperties properties =
                new AMQP.BasicProperties.Builder().headers(headers).build();
        try {
            publisher.publish(exchange, record.destination(), record.messageId(), properties, record.payload());
            return CompletableFuture.completedFuture(null);
        } catch (RetryLaterException e) {
            if (e.getMessage() != null && e.getMessage().contains("not stored")) {
                return CompletableFuture.failedFuture(new PublishRefusedException(e.getMessage(), e));
            }
            return CompletableFuture.failedFuture(e);
        }
    }
}
