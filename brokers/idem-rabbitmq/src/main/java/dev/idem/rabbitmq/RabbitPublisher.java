package dev.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.idem.ConfigurationException;
import dev.idem.RetryLaterException;
import dev.idem.RetryPolicy;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * Publishes with publisher confirms, with the message id fixed <b>before the first publish</b> in the AMQP {@code
 * message-id} property, and publishes the same message again when a confirm does not come.
 *
 * <p>RabbitMQ does not deduplicate: a confirm lost on the way back (a network partition, a broker failover) leaves the
 * publisher not knowing whether the message is stored, and publishing again can store it twice. This publisher
 * accepts that (at least once) and makes the copies recognisable: every attempt carries the same {@code message-id},
 * which the consumer's guard reads ({@link KeyExtractor#messageId()}) to apply the effect once.
 *
 * <p><b>Resend on timeout.</b> An attempt counts when the broker confirmed it and did not return it as unroutable
 * ({@code mandatory}). When the confirm does not arrive within {@code confirmTimeout}, the connection's state is
 * unknown: it is aborted, and the next attempt, after the retry policy's backoff, publishes the same message on a new
 * connection. After {@code maxAttempts} attempts {@link #publish} throws {@link RetryLaterException}: the message
 * may be stored zero, one or more times, and the caller may publish it again later with the same id. A message the
 * broker returns as unroutable (no queue bound) is not stored and not retried: {@link #publish} throws at once.
 *
 * <p>Thread-safe: publishes are serialised on one channel (one confirm awaited at a time). Close it when done; it
 * closes the connection it opened.
 */
public final class RabbitPublisher implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(RabbitPublisher.class.getName());
    /** AMQP's {@code message-id} is a short string. */
    private static final int MAX_MESSAGE_ID_BYTES = 255;

    private final ConnectionFactory factory;
    private final Duration confirmTimeout;
    private final RetryPolicy retryPolicy;
    private @Nullable Connection connection;
    private @Nullable Channel channel;
    private boolean closed;

    private RabbitPublisher(Builder b) {
        this.factory = b.factory;
        this.confirmTimeout = b.confirmTimeout;
        this.retryPolicy = b.retryPolicy;
    }

    /** A publisher that opens its connections from {@code factory}. */
    public static Builder builder(ConnectionFactory factory) {
        return new Builder(factory);
    }

    /**
     * {@link #publish(String, String, String, AMQP.BasicProperties, byte[])} with persistent delivery and no other
     * property.
     */
    public void publish(String exchange, String routingKey, String messageId, byte[] body) {
        publish(exchange, routingKey, messageId, new AMQP.BasicProperties.Builder().build(), body);
    }

    /**
     * Publishes {@code body} with {@code properties} and {@code message-id} = {@code messageId} (a business key such as
     * {@code 10086:PAY} or a generated Idem message id), and returns once the broker confirmed it. Persistent unless
     * {@code properties} say otherwise.
     *
     * @throws IllegalArgumentException when {@code messageId} is blank, or {@code properties} carry another message id
     * @throws RetryLaterException when no attempt was confirmed (see the class comment)
     */
    public synchronized void publish(
            String exchange, String routingKey, String messageId, AMQP.BasicProperties properties, byte[] body) {
        Objects.requireNonNull(exchange, "exchange");
        Objects.requireNonNull(routingKey, "routingKey");
        AMQP.BasicProperties stamped = stamp(properties, messageId);
        if (closed) {
            throw new IllegalStateException("this RabbitPublisher is closed");
        }
        Exception last = null;
        for (int attempt = 1; attempt <= retryPolicy.maxAttempts(); attempt++) {
            if (last != null && !sleep(retryPolicy.delayAfter(attempt - 1))) {
                throw new RetryLaterException("interrupted while publishing " + messageId, last);
            }
            try {
                ConfirmedPublish.publish(channel(), exchange, routingKey, stamped, body, confirmTimeout);
                return;
            } catch (ConfirmedPublish.NotConfirmedException e) {
                if (e.returned()) {
                    throw new RetryLaterException(
                            "publish of " + messageId + " not stored: " + e.getMessage()
                                    + "; publish it again with the same message id once the queue is bound",
                            e);
                }
                last = e;
                warnAndAbandon(messageId, attempt, e);
            } catch (IOException e) {
                last = e;
                warnAndAbandon(messageId, attempt, e);
            } catch (RuntimeException e) {
                // properties the client cannot encode: it counted the publish for confirms before refusing it, so the
                // channel would wait for a confirm that never comes
                abandonConnection();
                throw e;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                abandonConnection();
                throw new RetryLaterException(
                        "interrupted while waiting for the confirm of " + messageId + ": it may be stored", e);
            }
        }
        throw new RetryLaterException(
                "publish of " + messageId + " to exchange '" + exchange + "' not confirmed after "
                        + retryPolicy.maxAttempts() + " attempts: it may be stored zero, one or more times;"
                        + " publish it again later with the same message id",
                last);
    }

    private void warnAndAbandon(String messageId, int attempt, IOException e) {
        LOG.log(
                System.Logger.Level.WARNING,
                "publish of {0}, attempt {1}: {2}; {3}",
                messageId,
                attempt,
                e.getMessage(),
                attempt < retryPolicy.maxAttempts() ? "publishing it again on a new connection" : "giving up");
        abandonConnection();
    }

    /** {@code properties} with {@code message-id} set, persistent unless a delivery mode is set. */
    static AMQP.BasicProperties stamp(AMQP.BasicProperties properties, String messageId) {
        Objects.requireNonNull(messageId, "messageId");
        if (messageId.isBlank()) {
            throw new IllegalArgumentException("a message id must not be blank");
        }
        int bytes = messageId.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_MESSAGE_ID_BYTES) {
            throw new IllegalArgumentException("a message id must be at most " + MAX_MESSAGE_ID_BYTES
                    + " bytes of UTF-8 (an AMQP short string), got " + bytes + ": use a shorter id, or carry the key"
                    + " in a header and consume with KeyExtractor.header(name)");
        }
        String existing = properties.getMessageId();
        if (existing != null && !existing.equals(messageId)) {
            throw new IllegalArgumentException("the properties already carry message id '" + existing + "', not '"
                    + messageId + "': fix a message's id once, before its first publish");
        }
        return properties
                .builder()
                .messageId(messageId)
                .deliveryMode(properties.getDeliveryMode() == null ? 2 : properties.getDeliveryMode())
                .build();
    }

    private Channel channel() throws IOException {
        Channel c = channel;
        if (c != null && c.isOpen()) {
            return c;
        }
        if (connection == null || !connection.isOpen()) {
            try {
                connection = factory.newConnection("idem-rabbitmq-publisher");
            } catch (TimeoutException e) {
                throw new IOException("connecting to RabbitMQ timed out", e);
            }
        }
        c = connection.createChannel();
        c.confirmSelect();
        channel = c;
        return c;
    }

    /** The confirm never came: nothing on this connection can be trusted any more. */
    private void abandonConnection() {
        Connection c = connection;
        connection = null;
        channel = null;
        if (c != null) {
            c.abort(1000);
        }
    }

    @Override
    public synchronized void close() {
        closed = true;
        Connection c = connection;
        connection = null;
        channel = null;
        if (c != null && c.isOpen()) {
            try {
                c.close(5000);
            } catch (IOException | RuntimeException e) {
                c.abort(1000);
            }
        }
    }

    private static boolean sleep(Duration delay) {
        try {
            Thread.sleep(delay.toMillis());
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Builds a {@link RabbitPublisher}. */
    public static final class Builder {
        private final ConnectionFactory factory;
        private Duration confirmTimeout = Duration.ofSeconds(10);
        private RetryPolicy retryPolicy = RetryPolicy.defaults();

        private Builder(ConnectionFactory factory) {
            this.factory = Objects.requireNonNull(factory, "factory");
        }

        /** How long one attempt waits for the broker's confirm. Default 10 s. */
        public Builder confirmTimeout(Duration timeout) {
            if (timeout == null || timeout.isNegative() || timeout.isZero()) {
                throw new ConfigurationException("confirmTimeout must be a positive duration, got " + timeout);
            }
            this.confirmTimeout = timeout;
            return this;
        }

        /** Attempts and backoff between them. Default {@link RetryPolicy#defaults()} (10 attempts). */
        public Builder retryPolicy(RetryPolicy retryPolicy) {
            this.retryPolicy = Objects.requireNonNull(retryPolicy, "retryPolicy");
            return this;
        }

        public RabbitPublisher build() {
            return new RabbitPublisher(this);
        }
    }
}
