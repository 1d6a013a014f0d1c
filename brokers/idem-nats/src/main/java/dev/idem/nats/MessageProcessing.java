package dev.idem.nats;

import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import io.nats.client.Message;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * One delivery from fetch to its final signal: read the key, run the handler, and answer the server with {@code
 * ackSync} (final), {@code nakWithDelay} (retry later) or a dead letter followed by {@code term}. Its in-progress
 * tick runs until that signal is sent.
 */
final class MessageProcessing {
    private static final System.Logger LOG = System.getLogger(MessageProcessing.class.getName());

    private final String name;
    private final KeyExtractor keyExtractor;
    private final MessageHandler handler;
    private final RetryPolicy retryPolicy;
    private final ServerSettings settings;
    private final DeadLetters deadLetters;
    private final NatsEvents events;
    private final Duration ackTimeout;

    MessageProcessing(
            String name,
            KeyExtractor keyExtractor,
            MessageHandler handler,
            RetryPolicy retryPolicy,
            ServerSettings settings,
            DeadLetters deadLetters,
            NatsEvents events,
            Duration ackTimeout) {
        this.name = name;
        this.keyExtractor = keyExtractor;
        this.handler = handler;
        this.retryPolicy = retryPolicy;
        this.settings = settings;
        this.deadLetters = deadLetters;
        this.events = events;
        this.ackTimeout = ackTimeout;
    }

    /**
     * Handles {@code message} and sends its signal. An {@link Error} from the handler propagates with nothing sent:
     * the message comes back after AckWait, like after a crash.
     */
    void process(Message message, InProgressTicker.Tick tick) {
        int attempt = (int) Math.min(Integer.MAX_VALUE, message.metaData().deliveredCount());
        String key;
        try {
            key = keyExtractor.extract(message);
        } catch (Exception e) {
            deadLetter(
                    message,
                    null,
                    Outcome.rejected("idempotency key unreadable from " + keyExtractor.describe() + ": " + e, e),
                    attempt,
                    tick);
            return;
        }
        if (key == null || key.isBlank()) {
            deadLetter(
                    message,
                    null,
                    Outcome.rejected("no idempotency key: " + keyExtractor.describe() + " is missing or blank; the"
                            + " producer must stamp one before the first publish (NatsProducers.message)"),
                    attempt,
                    tick);
            return;
        }
        Outcome outcome = run(key, message);
        while (outcome.type() == Outcome.Type.IN_PROGRESS && settings.lastDelivery(attempt)) {
            // A nak now would be the last: the server stops delivering at MaxDeliver. Wait here with the tick on.
            if (!pause(retryDelay(outcome, attempt))) {
                Thread.interrupted(); // the shutdown's interrupt: clear it so the dead letter can be published
                deadLetter(
                        message,
                        key,
                        outcome.withReason("consumer stopped while holding the last delivery (MaxDeliver "
                                + settings.maxDeliver() + ") of a message in progress elsewhere; kept here instead of"
                                + " lost: " + outcome.reason()),
                        attempt,
                        tick);
                Thread.currentThread().interrupt();
                return;
            }
            outcome = run(key, message);
        }
        Outcome last = outcome;
        LOG.log(System.Logger.Level.DEBUG, () -> name + " " + describe(message) + " attempt " + attempt + ": " + last);
        settle(message, key, last, attempt, tick);
    }

    private void settle(Message message, String key, Outcome outcome, int attempt, InProgressTicker.Tick tick) {
        switch (outcome.action()) {
            case ACK -> ack(message, key, outcome, attempt, tick);
            case DEAD_LETTER -> deadLetter(message, key, outcome, attempt, tick);
            case RETRY -> {
                boolean handlersOwn = outcome.type() != Outcome.Type.IN_PROGRESS;
                if (handlersOwn && (retryPolicy.exhausted(attempt) || settings.lastDelivery(attempt))) {
                    deadLetter(
                            message,
                            key,
                            outcome.withReason("gave up after " + attempt + " attempts; last: " + outcome.reason()),
                            attempt,
                            tick);
                } else {
                    Duration delay = retryDelay(outcome, attempt);
                    tick.stop();
                    message.nakWithDelay(delay);
                    events.retryScheduled(key, outcome, attempt, delay);
                }
            }
        }
    }

    /** Final outcomes are acked with {@code ackSync}: COMMITTED is reported only once the server confirmed it. */
    private void ack(Message message, String key, Outcome outcome, int attempt, InProgressTicker.Tick tick) {
        tick.stop();
        try {
            message.ackSync(ackTimeout);
            events.committed(key, outcome, attempt);
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

    /**
     * Publishes the dead letter and terminates the original only after the dead-letter stream stored it. When the
     * dead-letter stream is unavailable the message is retried later; at its last delivery it is held here instead.
     */
    private void deadLetter(
            Message message, @Nullable String key, Outcome outcome, int attempt, InProgressTicker.Tick tick) {
        for (int tries = 1; ; tries++) {
            try {
                deadLetters.publish(message, outcome, attempt);
                tick.stop();
                message.term();
                LOG.log(
                        System.Logger.Level.WARNING,
                        "{0} {1} dead-lettered to {2} ({3}): {4}",
                        name,
                        describe(message),
                        deadLetters.subject(),
                        outcome.type(),
                        outcome.reason());
                events.deadLettered(key, outcome, attempt, deadLetters.subject());
                return;
            } catch (Exception e) {
                Duration delay = retryPolicy.delayAfter(Math.max(attempt, tries));
                LOG.log(
                        System.Logger.Level.WARNING,
                        "{0} {1}: dead-letter subject {2} unavailable ({3}); retrying later",
                        name,
                        describe(message),
                        deadLetters.subject(),
                        e.toString());
                if (!settings.lastDelivery(attempt)) {
                    tick.stop();
                    message.nakWithDelay(delay);
                    events.retryScheduled(key, outcome, attempt, delay);
                    return;
                }
                if (!pause(delay)) {
                    return; // shutting down: left unacked; without the dead-letter stream nothing else keeps it
                }
            }
        }
    }

    private Outcome run(String key, Message message) {
        try {
            return Objects.requireNonNull(handler.handle(key, message), "a handler must return an Outcome, not null");
        } catch (Exception e) {
            return Outcome.ofException(e);
        }
    }

    /**
     * The policy's back-off, but never later than the outcome's own {@code retryAfter} (for {@code IN_PROGRESS}: when
     * the holder's lease ends); the holder usually finishes well before that.
     */
    private Duration retryDelay(Outcome outcome, int attempt) {
        Duration backoff = retryPolicy.delayAfter(Math.max(1, attempt));
        return outcome.retryAfter()
                .filter(after -> after.compareTo(backoff) < 0)
                .orElse(backoff);
    }

    /** Waits {@code delay}; false when the worker is interrupted (the consumer's shutdown timeout ran out). */
    private static boolean pause(Duration delay) {
        try {
            Thread.sleep(Math.max(1, delay.toMillis()));
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    static String describe(Message message) {
        var meta = message.metaData();
        return meta.getStream() + "#" + meta.streamSequence() + " (" + message.getSubject() + ")";
    }
}
