package dev.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.ShutdownSignalException;
import dev.idem.ConfigurationException;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * What happens to one delivery of the work queue: read its key, run the guarded handler, and turn the {@link Outcome}
 * into the broker's verb on the channel the delivery came on (consumed with manual acks).
 *
 * <ul>
 *   <li>{@code PROCESSED}, {@code DUPLICATE}: {@code basic.ack}.
 *   <li>{@code FAILED}, {@code OUT_OF_ORDER}: one more attempt is counted in header {@value #ATTEMPTS_HEADER}; the
 *       message is published to the retry queue with the {@link RetryPolicy} backoff as its per-message TTL, and once
 *       the broker confirmed that copy, the delivery is acked. When the TTL ends the retry queue dead-letters it back
 *       to the work queue. After {@code maxAttempts} attempts the message is dead-lettered instead.
 *   <li>{@code IN_PROGRESS}: the same way back through the retry queue, after the outcome's {@code retryAfter} (the
 *       holder's lease, capped by the policy's {@code maxDelay}), but never counted as an attempt and never
 *       dead-lettered by the bound: the key is held elsewhere or the store is down, and waiting is right.
 *   <li>{@code REJECTED}, a missing or unreadable key: published to the dead-letter exchange with the reason in
 *       headers ({@value #DLQ_REASON}, {@value #DLQ_OUTCOME}, {@value #DLQ_ATTEMPTS}, {@value #DLQ_QUEUE}, {@value
 *       #DLQ_EXCHANGE}, {@value #DLQ_ROUTING_KEY}); acked once the broker confirmed the dead letter.
 * </ul>
 *
 * <p>The copy (retry or dead letter) is always confirmed before the delivery is acked, so a message is never lost
 * between the two; a crash in between leaves both, and the guard answers {@code DUPLICATE} to the extra copy. When the
 * copy is not confirmed (timeout, nack, returned as unroutable, channel closed), the channel is aborted, which returns
 * every unacked delivery on it to the work queue, and {@link #process} throws: the host reopens the channel after a
 * pause, so a topology that cannot take the copy does not turn into a redelivery loop without delay.
 *
 * <p>A copy must fit in one frame ({@code frame_max}) with its headers: the reason is cut to 1,000 characters, a retry
 * copy that would not fit is dead-lettered instead, and a dead letter that would not fit drops the message's own
 * headers and says so in its reason. The attempt count is read from a header anyone can set: it is never taken as
 * negative or beyond {@code Integer.MAX_VALUE - 1}.
 *
 * <p>Hosting it in another container: consume with manual acks, call {@link #process} for each delivery on the
 * delivery's own channel, and never from two threads for one channel at a time. The channel is put in confirm mode
 * on first use if it is not. Immutable and thread-safe.
 */
public final class DeliveryProcessor {
    /** Attempts whose outcome was the handler's ({@code FAILED}, {@code OUT_OF_ORDER}) so far, as an integer. */
    public static final String ATTEMPTS_HEADER = "idem-attempts";

    public static final String DLQ_REASON = "idem-dlq-reason";
    public static final String DLQ_OUTCOME = "idem-dlq-outcome";
    public static final String DLQ_ATTEMPTS = "idem-dlq-attempts";
    public static final String DLQ_QUEUE = "idem-dlq-queue";
    public static final String DLQ_EXCHANGE = "idem-dlq-exchange";
    public static final String DLQ_ROUTING_KEY = "idem-dlq-routing-key";

    private static final Set<String> DLQ_HEADERS =
            Set.of(DLQ_REASON, DLQ_OUTCOME, DLQ_ATTEMPTS, DLQ_QUEUE, DLQ_EXCHANGE, DLQ_ROUTING_KEY);
    /** A reason longer than this is cut: the whole content header of a copy must fit in one frame. */
    private static final int MAX_REASON = 1_000;

    private static final System.Logger LOG = System.getLogger(DeliveryProcessor.class.getName());

    private final RabbitTopology topology;
    private final KeyExtractor keyExtractor;
    private final @Nullable MessageHandler handler;
    private final RetryPolicy retryPolicy;
    private final Duration confirmTimeout;
    private final RabbitEvents events;

    private DeliveryProcessor(Builder b) {
        this.topology = b.topology;
        this.keyExtractor = b.keyExtractor;
        this.handler = b.handler;
        this.retryPolicy = b.retryPolicy;
        this.confirmTimeout = b.confirmTimeout;
        this.events = new RabbitEvents(b.listener, topology.workQueue());
    }

    public static Builder builder(RabbitTopology topology) {
        return new Builder(topology);
    }

    public RabbitTopology topology() {
        return topology;
    }

    /**
     * Handles {@code message}, delivered on {@code channel}, and acks, retries or dead-letters it.
     *
     * @return the outcome that decided what happened (for a missing key: the {@code REJECTED} outcome)
     * @throws IOException when the channel failed or the retry / dead-letter copy was not confirmed; the message then
     *     goes back to the work queue (the broker redelivers it)
     */
    public Outcome process(Channel channel, Delivery message) throws IOException {
        int failures = failuresSoFar(message);
        int attempt = failures + 1;
        String key;
        try {
            key = keyExtractor.extract(message);
        } catch (Exception e) {
            Outcome rejected = Outcome.rejected(
                    "idempotency key unreadable from " + keyExtractor.describe() + ": "
                            + e.getClass().getName() + ": " + e.getMessage(),
                    e);
            deadLetter(channel, message, null, rejected, attempt, true);
            return rejected;
        }
        if (key == null || key.isBlank()) {
            Outcome rejected = Outcome.rejected("no idempotency key: " + keyExtractor.describe()
                    + " is missing or blank; the producer must set it before the first publish (RabbitPublisher)");
            deadLetter(channel, message, null, rejected, attempt, true);
            return rejected;
        }
        Outcome outcome = runHandler(key, message);
        LOG.log(System.Logger.Level.DEBUG, () -> topology.workQueue() + " attempt " + attempt + ": " + outcome);
        switch (outcome.action()) {
            case ACK -> {
                ack(channel, message);
                events.committed(key, outcome, attempt);
            }
            case DEAD_LETTER -> deadLetter(channel, message, key, outcome, attempt, true);
            case RETRY -> retry(channel, message, key, outcome, failures, true);
        }
        return outcome;
    }

    /**
     * For a container that acknowledges by itself (spring-rabbit's {@code AUTO} mode): everything {@link #process}
     * does after a handling that ended {@code outcome}, but the ack. A retried outcome's copy goes to the retry queue
     * (attempts counted, dead letter at the bound), a {@code REJECTED} one to the dead-letter exchange with the reason;
     * when this returns the copy is confirmed and the container may ack the delivery. A final outcome does nothing.
     *
     * @param key the message's key, for the events; null when unknown
     * @throws IOException when the copy was not confirmed; the channel was aborted, so the delivery goes back to the
     *     work queue unacked
     */
    public void settleWithoutAck(Channel channel, Delivery message, @Nullable String key, Outcome outcome)
            throws IOException {
        int failures = failuresSoFar(message);
        switch (outcome.action()) {
            case ACK -> {}
            case DEAD_LETTER -> deadLetter(channel, message, key, outcome, failures + 1, false);
            case RETRY -> retry(channel, message, key, outcome, failures, false);
        }
    }

    private Outcome runHandler(String key, Delivery message) {
        MessageHandler h = handler;
        if (h == null) {
            throw new IllegalStateException("this DeliveryProcessor was built without a handler: it only settles"
                    + " (settleWithoutAck); build it with .handler(...).build() to process deliveries");
        }
        try {
            return Objects.requireNonNull(h.handle(key, message), "a handler must return an Outcome, not null");
        } catch (Exception e) {
            return Outcome.ofException(e);
        }
    }

    private void retry(
            Channel channel, Delivery message, @Nullable String key, Outcome outcome, int failures, boolean ack)
            throws IOException {
        boolean handlersOwn = outcome.type() != Outcome.Type.IN_PROGRESS;
        int attempt = failures + 1;
        if (handlersOwn && retryPolicy.exhausted(attempt)) {
            deadLetter(
                    channel,
                    message,
                    key,
                    outcome.withReason("gave up after " + attempt + " attempts; last: " + outcome.reason()),
                    attempt,
                    ack);
            return;
        }
        Duration delay = handlersOwn ? backoff(outcome, attempt) : waitForHolder(outcome);
        Map<String, Object> headers = headersOf(message);
        headers.put(ATTEMPTS_HEADER, handlersOwn ? attempt : failures);
        AMQP.BasicProperties copy = copyOf(message.getProperties())
                .headers(headers)
                .expiration(Long.toString(delay.toMillis()))
                .build();
        if (!Channels.fitsInOneFrame(channel, copy, message.getBody().length)) {
            deadLetter(
                    channel,
                    message,
                    key,
                    outcome.withReason("no retry copy possible, its headers exceed the connection's frame_max; last: "
                            + outcome.reason()),
                    attempt,
                    ack);
            return;
        }
        publishThenAck(channel, message, "", topology.retryQueue(), copy, "retry copy", ack);
        events.retryScheduled(key, outcome, attempt, delay, topology.retryQueue());
    }

    /** The policy's backoff, but never later than the outcome's own {@code retryAfter}. */
    private Duration backoff(Outcome outcome, int attempt) {
        Duration backoff = retryPolicy.delayAfter(attempt);
        return outcome.retryAfter()
                .filter(after -> after.compareTo(backoff) < 0)
                .orElse(backoff);
    }

    /** Until the holder's lease ends, within the policy's initial and maximum delay. */
    private Duration waitForHolder(Outcome outcome) {
        Duration after = outcome.retryAfter().orElse(retryPolicy.initialDelay());
        if (after.compareTo(retryPolicy.initialDelay()) < 0) {
            return retryPolicy.initialDelay();
        }
        return after.compareTo(retryPolicy.maxDelay()) > 0 ? retryPolicy.maxDelay() : after;
    }

    private void deadLetter(
            Channel channel, Delivery message, @Nullable String key, Outcome outcome, int attempt, boolean ack)
            throws IOException {
        Map<String, Object> headers = headersOf(message);
        headers.put(DLQ_REASON, cut(outcome.reason()));
        headers.put(DLQ_OUTCOME, outcome.type().name());
        headers.put(DLQ_ATTEMPTS, attempt);
        headers.put(DLQ_QUEUE, topology.workQueue());
        headers.put(DLQ_EXCHANGE, message.getEnvelope().getExchange());
        headers.put(DLQ_ROUTING_KEY, message.getEnvelope().getRoutingKey());
        AMQP.BasicProperties copy =
                copyOf(message.getProperties()).headers(headers).build();
        if (!Channels.fitsInOneFrame(channel, copy, message.getBody().length)) {
            Map<String, Object> ours = new HashMap<>(headers);
            ours.keySet().retainAll(DLQ_HEADERS);
            ours.put(
                    DLQ_REASON,
                    cut(outcome.reason()) + " (the message's own headers were dropped from this dead letter: with them"
                            + " it exceeds the connection's frame_max of "
                            + channel.getConnection().getFrameMax()
                            + " bytes)");
            copy = copyOf(message.getProperties()).headers(ours).build();
        }
        publishThenAck(channel, message, topology.deadLetterExchange(), topology.workQueue(), copy, "dead letter", ack);
        LOG.log(
                System.Logger.Level.WARNING,
                "{0}: message dead-lettered to {1} ({2}): {3}",
                topology.workQueue(),
                topology.deadLetterExchange(),
                outcome.type(),
                outcome.reason());
        events.deadLettered(key, outcome, attempt, topology.deadLetterExchange());
    }

    private void publishThenAck(
            Channel channel,
            Delivery message,
            String exchange,
            String routingKey,
            AMQP.BasicProperties copy,
            String what,
            boolean ack)
            throws IOException {
        try {
            ConfirmedPublish.publish(channel, exchange, routingKey, copy, message.getBody(), confirmTimeout);
        } catch (ConfirmedPublish.NotConfirmedException e) {
            giveBack(channel);
            throw new IOException(
                    topology.workQueue() + ": " + what + " not confirmed, the message goes back to the queue: "
                            + e.getMessage(),
                    e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            giveBack(channel);
            var interrupted = new InterruptedIOException(
                    topology.workQueue() + ": interrupted while waiting for the confirm of the " + what);
            interrupted.initCause(e);
            throw interrupted;
        }
        if (ack) {
            ack(channel, message);
        }
    }

    /**
     * Returns the delivery to the work queue by aborting the channel, which requeues every unacked delivery on it: a
     * channel whose confirm is overdue cannot be trusted with the next publish (its confirms are counted together), and
     * a requeue of this delivery alone would hand it out again at once, without any delay, for as long as the copy
     * cannot be placed. The host reopens the channel after a pause.
     */
    private static void giveBack(Channel channel) {
        Channels.abort(channel);
    }

    private static void ack(Channel channel, Delivery message) throws IOException {
        try {
            channel.basicAck(message.getEnvelope().getDeliveryTag(), false);
        } catch (ShutdownSignalException e) {
            throw new IOException(
                    "ack failed, the channel is closed (" + e.getMessage() + "): the broker redelivers the message", e);
        }
    }

    private static String cut(String reason) {
        return reason.length() <= MAX_REASON ? reason : reason.substring(0, MAX_REASON) + "...";
    }

    private static int failuresSoFar(Delivery message) {
        Map<String, Object> headers = message.getProperties().getHeaders();
        Object value = headers == null ? null : headers.get(ATTEMPTS_HEADER);
        if (value instanceof Number n) {
            return clampFailures(n.longValue());
        }
        if (value != null) {
            try {
                return clampFailures(Long.parseLong(value.toString().trim()));
            } catch (NumberFormatException e) {
                return 0;
            }
        }
        return 0;
    }

    /** A count from a header anyone can set: never negative, and one more attempt must still be an int. */
    private static int clampFailures(long failures) {
        return (int) Math.max(0, Math.min(failures, Integer.MAX_VALUE - 1L));
    }

    /** The message's headers for a copy, without the quorum queue's {@code x-delivery-count} of this delivery. */
    private static Map<String, Object> headersOf(Delivery message) {
        Map<String, Object> headers = message.getProperties().getHeaders();
        Map<String, Object> copy = headers == null ? new HashMap<>() : new HashMap<>(headers);
        copy.remove("x-delivery-count");
        return copy;
    }

    /**
     * The message's properties for a copy: all but {@code user-id} (the broker refuses a publish whose user-id is not
     * the publishing connection's user) and {@code expiration} (the copy's own TTL is set by the caller).
     */
    private static AMQP.BasicProperties.Builder copyOf(AMQP.BasicProperties p) {
        return new AMQP.BasicProperties.Builder()
                .contentType(p.getContentType())
                .contentEncoding(p.getContentEncoding())
                .deliveryMode(p.getDeliveryMode())
                .priority(p.getPriority())
                .correlationId(p.getCorrelationId())
                .replyTo(p.getReplyTo())
                .messageId(p.getMessageId())
                .timestamp(p.getTimestamp())
                .type(p.getType())
                .appId(p.getAppId())
                .clusterId(p.getClusterId());
    }

    /** Builds a {@link DeliveryProcessor}. Each setter validates its value at once. */
    public static final class Builder {
        private final RabbitTopology topology;
        private KeyExtractor keyExtractor = KeyExtractor.messageId();
        private @Nullable MessageHandler handler;
        private RetryPolicy retryPolicy = RetryPolicy.defaults();
        private Duration confirmTimeout = Duration.ofSeconds(10);
        private IdempotencyListener listener = IdempotencyListener.NONE;

        private Builder(RabbitTopology topology) {
            this.topology = Objects.requireNonNull(topology, "topology");
        }

        /** Where the key comes from. Default {@link KeyExtractor#messageId()}. */
        public Builder keyFrom(KeyExtractor extractor) {
            this.keyExtractor = Objects.requireNonNull(extractor, "extractor");
            return this;
        }

        /** Required by {@link #build()}: the guarded handler. */
        public Builder handler(MessageHandler handler) {
            this.handler = Objects.requireNonNull(handler, "handler");
            return this;
        }

        /** Backoff and bound for retried messages. Default {@link RetryPolicy#defaults()} (10 attempts). */
        public Builder retryPolicy(RetryPolicy retryPolicy) {
            this.retryPolicy = Objects.requireNonNull(retryPolicy, "retryPolicy");
            return this;
        }

        /** How long to wait for the broker to confirm a retry copy or a dead letter. Default 10 s. */
        public Builder confirmTimeout(Duration timeout) {
            if (timeout == null || timeout.isNegative() || timeout.isZero()) {
                throw new ConfigurationException("confirmTimeout must be a positive duration, got " + timeout);
            }
            this.confirmTimeout = timeout;
            return this;
        }

        /** Told of every retry scheduled, dead letter and ack (source {@code "rabbitmq"}). */
        public Builder listener(IdempotencyListener listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        public DeliveryProcessor build() {
            if (handler == null) {
                throw new ConfigurationException("a DeliveryProcessor needs a handler: call .handler((key, message) ->"
                        + " guard.run(key, () -> ...)) on the builder");
            }
            return new DeliveryProcessor(this);
        }

        /**
         * A processor without a handler, for {@link DeliveryProcessor#settleWithoutAck} only (a container that runs the
         * guarded listener and acks by itself); its {@link DeliveryProcessor#process} refuses to run.
         */
        public DeliveryProcessor buildForSettling() {
            return new DeliveryProcessor(this);
        }
    }
}
