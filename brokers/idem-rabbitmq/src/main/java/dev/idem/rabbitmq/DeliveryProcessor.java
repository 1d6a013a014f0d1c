package dev.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.ShutdownSignalException;
import dev.idem.ConfigurationException;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.spi.Attempts;
import dev.idem.spi.DeliveryDecision;
import dev.idem.spi.FailureClassifier;
import dev.idem.spi.Verdict;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * What happens to one delivery of the work queue: read its key, run the guarded handler, and turn the {@link Verdict}
 * of the {@link DeliveryDecision} (the one every Idem adapter follows) into the broker's verb on the channel the
 * delivery came on (consumed with manual acks).
 *
 * <ul>
 *   <li>{@link Verdict.Ack} ({@code PROCESSED}, {@code DUPLICATE}): {@code basic.ack}.
 *   <li>{@link Verdict.Retry} ({@code FAILED}, {@code OUT_OF_ORDER}: counted in header {@value #ATTEMPTS_HEADER};
 *       {@code IN_PROGRESS}, a store or database that cannot be reached: waits, never counted): the message is
 *       published to the retry queue with the decision's delay as its per-message TTL, and once the broker confirmed
 *       that copy, the delivery is acked. When the TTL ends the retry queue dead-letters it back to the work queue.
 *   <li>{@link Verdict.DeadLetter} ({@code REJECTED}, a count past the policy's bound, a missing or unreadable key):
 *       published to the dead-letter exchange with the reason in headers ({@value #DLQ_REASON}, {@value #DLQ_OUTCOME},
 *       {@value #DLQ_ATTEMPTS}, {@value #DLQ_QUEUE}, {@value #DLQ_EXCHANGE}, {@value #DLQ_ROUTING_KEY}); acked once the
 *       broker confirmed the dead letter.
 * </ul>
 *
 * <p>What a copy keeps of the delivery's headers is {@link CopyProperties}'s rule: never the broker's routing headers
 * ({@code CC}, {@code BCC}), and a retry copy never the dead-letter history ({@code x-death}) that would make the broker
 * drop it as a cycle. Before its first retry copy the processor checks that the retry queue has the arguments that
 * bring a copy back ({@link RabbitTopology#verify}); when it has not, the copy is not published.
 *
 * <p>The copy (retry or dead letter) is always confirmed before the delivery is acked, so a message is never lost
 * between the two; a crash in between leaves both, and the guard answers {@code DUPLICATE} to the extra copy. When the
 * copy is not confirmed (timeout, nack, returned as unroutable, channel closed) or cannot be placed, the channel is
 * aborted, which returns every unacked delivery on it to the work queue, and {@link #process} throws: the host reopens
 * the channel after a pause, so a topology that cannot take the copy does not turn into a redelivery loop without
 * delay.
 *
 * <p>A copy must fit in one frame ({@code frame_max}) with its headers: the reason is cut to 1,000 characters, a retry
 * copy that would not fit is dead-lettered instead, and a dead letter that would not fit drops the message's own
 * headers and says so in its reason.
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

    /** A reason longer than this is cut: the whole content header of a copy must fit in one frame. */
    private static final int MAX_REASON = 1_000;

    private static final System.Logger LOG = System.getLogger(DeliveryProcessor.class.getName());

    private final RabbitTopology topology;
    private final KeyExtractor keyExtractor;
    private final @Nullable MessageHandler handler;
    private final DeliveryDecision decision;
    private final Duration confirmTimeout;
    private final RabbitEvents events;
    /** Set once the retry queue was seen to bring copies back; checked again until then. */
    private volatile boolean retryQueueVerified;

    private DeliveryProcessor(Builder b) {
        this.topology = b.topology;
        this.keyExtractor = b.keyExtractor;
        this.handler = b.handler;
        this.decision = DeliveryDecision.of(b.retryPolicy, b.classifier);
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
        Attempts before = CopyProperties.attemptsOf(message.getProperties(), topology.retryQueue());
        String key;
        try {
            key = keyExtractor.extract(message);
        } catch (Exception e) {
            Outcome rejected = Outcome.rejected(
                    "idempotency key unreadable from " + keyExtractor.describe() + ": "
                            + e.getClass().getName() + ": " + e.getMessage(),
                    e);
            settle(channel, message, null, decision.decide(rejected, before), before, true);
            return rejected;
        }
        if (key == null || key.isBlank()) {
            Outcome rejected = Outcome.rejected("no idempotency key: " + keyExtractor.describe()
                    + " is missing or blank; the producer must set it before the first publish (RabbitPublisher)");
            settle(channel, message, null, decision.decide(rejected, before), before, true);
            return rejected;
        }
        Verdict verdict = runHandler(key, message, before);
        LOG.log(
                System.Logger.Level.DEBUG,
                () -> topology.workQueue() + " attempt " + attemptNumber(before) + ": " + verdict);
        settle(channel, message, key, verdict, before, true);
        return verdict.outcome();
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
        Attempts before = CopyProperties.attemptsOf(message.getProperties(), topology.retryQueue());
        settle(channel, message, key, decision.decide(outcome, before), before, false);
    }

    /**
     * {@link #settleWithoutAck(Channel, Delivery, String, Outcome)} for a handling that threw {@code thrown}, classified
     * by the processor's {@link FailureClassifier} (e.g. a database that cannot be reached: a wait, never counted).
     */
    public void settleWithoutAck(Channel channel, Delivery message, @Nullable String key, Throwable thrown)
            throws IOException {
        Attempts before = CopyProperties.attemptsOf(message.getProperties(), topology.retryQueue());
        settle(channel, message, key, decision.decide(thrown, before), before, false);
    }

    private Verdict runHandler(String key, Delivery message, Attempts before) {
        MessageHandler h = handler;
        if (h == null) {
            throw new IllegalStateException("this DeliveryProcessor was built without a handler: it only settles"
                    + " (settleWithoutAck); build it with .handler(...).build() to process deliveries");
        }
        Outcome outcome;
        try {
            outcome = h.handle(key, message);
        } catch (Exception e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            return decision.decide(e, before);
        }
        if (outcome == null) { // a bug in the handler, counted like a failure so that it ends in a dead letter
            outcome = Outcome.failed("the handler returned null: a handler must return an Outcome, not null", null);
        }
        return decision.decide(outcome, before);
    }

    private void settle(
            Channel channel, Delivery message, @Nullable String key, Verdict verdict, Attempts before, boolean ack)
            throws IOException {
        if (verdict instanceof Verdict.Retry retry) {
            retry(channel, message, key, retry, before, ack);
        } else if (verdict instanceof Verdict.DeadLetter dead) {
            deadLetter(channel, message, key, dead.outcome(), before, ack);
        } else if (ack) {
            ack(channel, message);
            events.committed(key, verdict.outcome(), attemptNumber(before));
        }
    }

    private void retry(
            Channel channel, Delivery message, @Nullable String key, Verdict.Retry retry, Attempts before, boolean ack)
            throws IOException {
        AMQP.BasicProperties copy = CopyProperties.retryCopy(message.getProperties(), retry.attempts(), retry.delay());
        if (!Channels.fitsInOneFrame(channel, copy, message.getBody().length)) {
            deadLetter(
                    channel,
                    message,
                    key,
                    retry.outcome()
                            .withReason("no retry copy possible, its headers exceed the connection's frame_max; last: "
                                    + retry.outcome().reason()),
                    before,
                    ack);
            return;
        }
        requireRetryQueueBringsCopiesBack(channel);
        publishThenAck(channel, message, "", topology.retryQueue(), copy, "retry copy", ack);
        events.retryScheduled(key, retry.outcome(), attemptNumber(before), retry.delay(), topology.retryQueue());
    }

    /** A retry queue without its dead-letter arguments confirms every copy and discards it when its TTL ends. */
    private void requireRetryQueueBringsCopiesBack(Channel channel) throws IOException {
        if (retryQueueVerified) {
            return;
        }
        try {
            topology.verifyRetryQueue(channel.getConnection());
        } catch (ConfigurationException | IOException | ShutdownSignalException e) {
            giveBack(channel);
            throw new IOException(
                    topology.workQueue() + ": no retry copy published, the message goes back to the queue: "
                            + e.getMessage(),
                    e);
        }
        retryQueueVerified = true;
    }

    private void deadLetter(
            Channel channel, Delivery message, @Nullable String key, Outcome outcome, Attempts before, boolean ack)
            throws IOException {
        int attempt = attemptNumber(before);
        Map<String, Object> reason = new HashMap<>();
        reason.put(DLQ_REASON, cut(outcome.reason()));
        reason.put(DLQ_OUTCOME, outcome.type().name());
        reason.put(DLQ_ATTEMPTS, attempt);
        reason.put(DLQ_QUEUE, topology.workQueue());
        reason.put(DLQ_EXCHANGE, message.getEnvelope().getExchange());
        reason.put(DLQ_ROUTING_KEY, message.getEnvelope().getRoutingKey());
        AMQP.BasicProperties copy = CopyProperties.deadLetter(message.getProperties(), reason, true);
        if (!Channels.fitsInOneFrame(channel, copy, message.getBody().length)) {
            reason.put(
                    DLQ_REASON,
                    cut(outcome.reason()) + " (the message's own headers were dropped from this dead letter: with them"
                            + " it exceeds the connection's frame_max of "
                            + channel.getConnection().getFrameMax()
                            + " bytes)");
            copy = CopyProperties.deadLetter(message.getProperties(), reason, false);
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
        Channels.giveBack(channel);
    }

    private static void ack(Channel channel, Delivery message) throws IOException {
        try {
            channel.basicAck(message.getEnvelope().getDeliveryTag(), false);
        } catch (ShutdownSignalException e) {
            throw new IOException(
                    "ack failed, the channel is closed (" + e.getMessage() + "): the broker redelivers the message", e);
        }
    }

    /** The attempt this delivery is: one more than the handler's failures before it. */
    private static int attemptNumber(Attempts before) {
        return before.failures() == Integer.MAX_VALUE ? Integer.MAX_VALUE : before.failures() + 1;
    }

    private static String cut(String reason) {
        return reason.length() <= MAX_REASON ? reason : reason.substring(0, MAX_REASON) + "...";
    }

    /** Builds a {@link DeliveryProcessor}. Each setter validates its value at once. */
    public static final class Builder {
        private final RabbitTopology topology;
        private KeyExtractor keyExtractor = KeyExtractor.messageId();
        private @Nullable MessageHandler handler;
        private RetryPolicy retryPolicy = RetryPolicy.defaults();
        private FailureClassifier classifier = FailureClassifier.standard();
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

        /**
         * How a thrown exception is classified ({@link FailureClassifier}): a host teaches it its framework's exceptions
         * (e.g. Spring's {@code CannotCreateTransactionException} as a database that cannot be reached). Default {@link
         * FailureClassifier#standard()}.
         */
        public Builder classifier(FailureClassifier classifier) {
            this.classifier = Objects.requireNonNull(classifier, "classifier");
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
