package dev.idem.nats;

import dev.idem.ConfigurationException;
import dev.idem.Outcome;
import dev.idem.spi.Attempts;
import dev.idem.spi.DeliveryDecision;
import dev.idem.spi.Verdict;
import io.nats.client.Message;
import java.time.Duration;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;

/**
 * One delivery from fetch to its final signal: read the key, run the handler, let the {@link DeliveryDecision} judge
 * the outcome, and translate its {@link Verdict} into the server's verbs: {@code ackSync}, {@code nakWithDelay}, or a
 * dead letter followed by {@code term}. Its in-progress tick runs until that signal is sent.
 */
final class MessageProcessing {
    private static final System.Logger LOG = System.getLogger(MessageProcessing.class.getName());
    /** The header a {@code HeadersOnly} consumer puts on each message in place of its body. */
    private static final String WITHHELD_BODY_SIZE = "Nats-Msg-Size";

    /** Reads the durable consumer's configuration now and checks it again. */
    @FunctionalInterface
    interface ConsumerCheck {
        /**
         * @throws ConfigurationException when the configuration is refused now
         * @throws Exception when it cannot be read
         */
        void now() throws Exception;
    }

    private final String name;
    private final KeyExtractor keyExtractor;
    private final MessageHandler handler;
    private final DeliveryDecision decision;
    private final RetryCounts retryCounts = new RetryCounts();
    private final DeadLetters deadLetters;
    private final NatsEvents events;
    private final Duration ackTimeout;
    private final ConsumerCheck consumerCheck;
    private final BooleanSupplier interruptedByShutdown;
    /**
     * The stream keeps a terminated message ({@code Limits} retention); with {@code WorkQueue} or {@code Interest}
     * retention a term deletes it.
     */
    private final boolean termKeepsData;

    MessageProcessing(
            String name,
            KeyExtractor keyExtractor,
            MessageHandler handler,
            DeliveryDecision decision,
            DeadLetters deadLetters,
            NatsEvents events,
            Duration ackTimeout,
            ConsumerCheck consumerCheck,
            BooleanSupplier interruptedByShutdown,
            boolean termKeepsData) {
        this.name = name;
        this.keyExtractor = keyExtractor;
        this.handler = handler;
        this.decision = decision;
        this.deadLetters = deadLetters;
        this.events = events;
        this.ackTimeout = ackTimeout;
        this.consumerCheck = consumerCheck;
        this.interruptedByShutdown = interruptedByShutdown;
        this.termKeepsData = termKeepsData;
    }

    /**
     * Handles {@code message} and sends its signal. An {@link Error} from the handler propagates with nothing sent:
     * the message comes back after AckWait, like after a crash; so does the {@link ConfigurationException} of
     * a consumer found {@code HeadersOnly} now.
     */
    void process(Message message, InProgressTicker.Tick tick) {
        Attempts before = retryCounts.of(message);
        if (bodyWithheld(message) && !consumerDeliversWholeMessages(message, before, tick)) {
            return;
        }
        String key;
        try {
            key = keyExtractor.extract(message);
        } catch (Exception e) {
            settle(message, null, decision.decide(unreadableKey(e), before), tick);
            return;
        }
        if (key == null || key.isBlank()) {
            settle(message, null, decision.decide(missingKey(), before), tick);
            return;
        }
        Verdict verdict = handle(key, message, before);
        LOG.log(System.Logger.Level.DEBUG, () -> name + " " + describe(message) + ": " + verdict);
        settle(message, key, verdict, tick);
    }

    private Verdict handle(String key, Message message, Attempts before) {
        Outcome outcome;
        try {
            outcome = handler.handle(key, message);
        } catch (Exception e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            outcome = decision.classifier().classify(e);
        }
        if (outcome == null) {
            return decision.decide(new NullPointerException("a handler must return an Outcome, not null"), before);
        }
        if (outcome.type() == Outcome.Type.FAILED && interruptedByShutdown.getAsBoolean()) {
            outcome = Outcome.inProgress(
                    "interrupted by the consumer's shutdown, not counted: " + outcome.reason(), null);
        }
        return decision.decide(outcome, before);
    }

    private void settle(Message message, @Nullable String key, Verdict verdict, InProgressTicker.Tick tick) {
        if (verdict instanceof Verdict.Ack) {
            ack(message, key, verdict.outcome(), tick);
        } else if (verdict instanceof Verdict.Retry retry) {
            retryLater(message, key, retry, tick);
        } else {
            deadLetter(message, key, (Verdict.DeadLetter) verdict, tick);
        }
    }

    /** Final outcomes are acked with {@code ackSync}: COMMITTED is reported only once the server confirmed it. */
    private void ack(Message message, @Nullable String key, Outcome outcome, InProgressTicker.Tick tick) {
        tick.stop();
        retryCounts.settled(message);
        try {
            message.ackSync(ackTimeout);
            events.committed(key, outcome, delivery(message));
        } catch (TimeoutException | RuntimeException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "{0} {1}: ack not confirmed ({2}); the server redelivers it after AckWait and the guard answers"
                            + " DUPLICATE",
                    name,
                    describe(message),
                    e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void retryLater(Message message, @Nullable String key, Verdict.Retry retry, InProgressTicker.Tick tick) {
        tick.stop();
        retryCounts.retried(message, retry.attempts());
        message.nakWithDelay(retry.delay());
        events.retryScheduled(key, retry.outcome(), delivery(message), retry.delay());
    }

    /**
     * Publishes the dead letter and terminates the original only after the dead-letter stream stored it. While the
     * dead-letter stream is unavailable the message is delivered again later, as an uncounted wait. A dead letter stored
     * without the data (too large) leaves the data only in the original: terminated where the stream keeps it, else
     * {@linkplain #keepPending kept pending}.
     */
    private void deadLetter(
            Message message, @Nullable String key, Verdict.DeadLetter verdict, InProgressTicker.Tick tick) {
        Outcome outcome = verdict.outcome();
        DeadLetters.Stored stored;
        try {
            stored = deadLetters.publish(message, key, outcome, delivery(message));
        } catch (Exception e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "{0} {1}: dead-letter subject {2} unavailable ({3}); retrying later",
                    name,
                    describe(message),
                    deadLetters.subject(),
                    e.toString());
            Outcome unavailable = Outcome.inProgress(
                    "dead-letter subject " + deadLetters.subject() + " unavailable (" + e + "); to dead-letter: "
                            + outcome.reason(),
                    null);
            retryLater(message, key, (Verdict.Retry) decision.decide(unavailable, verdict.attempts()), tick);
            return;
        }
        boolean withData = stored == DeadLetters.Stored.WITH_DATA;
        if (!withData && !termKeepsData) {
            keepPending(message, key, verdict, tick);
            return;
        }
        tick.stop();
        retryCounts.settled(message);
        message.term();
        LOG.log(
                System.Logger.Level.WARNING,
                "{0} {1} dead-lettered to {2}{3} ({4}): {5}",
                name,
                describe(message),
                deadLetters.subject(),
                withData ? "" : " without its data (too large; the original stays in its stream)",
                outcome.type(),
                verdict.reason());
        events.deadLettered(key, outcome, delivery(message), deadLetters.subject(), withData);
    }

    /**
     * The dead letter holds no data and a term would delete the original's: the message stays pending, delivered again
     * after the longest back-off, and says so each time (ERROR, RETRY_SCHEDULED) until an operator takes it out.
     */
    private void keepPending(
            Message message, @Nullable String key, Verdict.DeadLetter verdict, InProgressTicker.Tick tick) {
        tick.stop();
        retryCounts.retried(message, verdict.attempts());
        Duration delay = decision.retryPolicy().maxDelay();
        message.nakWithDelay(delay);
        LOG.log(
                System.Logger.Level.ERROR,
                "{0} {1}: too large to dead-letter with its data; a dead letter without it is in {2}, but the original"
                        + " is kept pending, not terminated: its stream''s WorkQueue or Interest retention would delete"
                        + " it. Fetch it by its sequence, then delete it from the stream (or raise max_payload);"
                        + " delivered again in {3} ms ({4}): {5}",
                name,
                describe(message),
                deadLetters.subject(),
                delay.toMillis(),
                verdict.outcome().type(),
                verdict.reason());
        events.keptPendingWithoutDeadLetter(key, verdict.outcome(), delivery(message), deadLetters.subject(), delay);
    }

    /**
     * An empty body next to {@value #WITHHELD_BODY_SIZE}: what a {@code HeadersOnly} consumer delivers, or a producer's
     * own header. Only the consumer's configuration tells which.
     */
    private static boolean bodyWithheld(Message message) {
        return (message.getData() == null || message.getData().length == 0)
                && message.hasHeaders()
                && message.getHeaders().getFirst(WITHHELD_BODY_SIZE) != null;
    }

    /**
     * Reads the consumer's configuration now: a consumer made {@code HeadersOnly} since start is refused (the {@link
     * ConfigurationException} propagates, nothing is sent). When it cannot be read, the message waits (false).
     */
    private boolean consumerDeliversWholeMessages(Message message, Attempts before, InProgressTicker.Tick tick) {
        try {
            consumerCheck.now();
            return true;
        } catch (ConfigurationException e) {
            throw e;
        } catch (Exception e) {
            Outcome unknown = Outcome.inProgress(
                    "delivered without a body next to " + WITHHELD_BODY_SIZE + ", and the consumer's configuration"
                            + " cannot be read to tell whether it is HeadersOnly: " + e,
                    null);
            settle(message, null, decision.decide(unknown, before), tick);
            return false;
        }
    }

    private Outcome unreadableKey(Exception e) {
        return Outcome.rejected("idempotency key unreadable from " + keyExtractor.describe() + ": " + e, e);
    }

    private Outcome missingKey() {
        return Outcome.rejected("no idempotency key: " + keyExtractor.describe() + " is missing or blank; the producer"
                + " must stamp one before the first publish (NatsProducers.message)");
    }

    /** The server's delivery count (1-based): what the dead letter and the events report as the attempt. */
    private static int delivery(Message message) {
        return (int) Math.min(Integer.MAX_VALUE, message.metaData().deliveredCount());
    }

    static String describe(Message message) {
        var meta = message.metaData();
        return meta.getStream() + "#" + meta.streamSequence() + " (" + message.getSubject() + ")";
    }
}
