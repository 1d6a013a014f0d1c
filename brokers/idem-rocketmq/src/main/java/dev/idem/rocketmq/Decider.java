package dev.idem.rocketmq;

import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import java.time.Duration;
import java.util.Objects;
import org.apache.rocketmq.common.message.MessageExt;
import org.jspecify.annotations.Nullable;

/** Runs the handler on one message with its key and turns the outcome into a {@link Decision}. */
final class Decider {
    private static final System.Logger LOG = System.getLogger(Decider.class.getName());

    private final KeyExtractor keyExtractor;
    private final MessageHandler handler;
    private final RetryPolicy retryPolicy;
    private final Duration consumeTimeout;
    private final Events events;

    Decider(
            KeyExtractor keyExtractor,
            MessageHandler handler,
            RetryPolicy retryPolicy,
            Duration consumeTimeout,
            Events events) {
        this.keyExtractor = keyExtractor;
        this.handler = handler;
        this.retryPolicy = retryPolicy;
        this.consumeTimeout = consumeTimeout;
        this.events = events;
    }

    /**
     * Handles {@code message}; {@code handlerAttempt} (1-based) counts the deliveries that were the handler's own
     * ({@code FAILED}, {@code OUT_OF_ORDER}), not those that met the key in progress.
     */
    Decision decide(MessageExt message, int handlerAttempt) {
        String key;
        try {
            key = keyExtractor.extract(message);
        } catch (Exception e) {
            return deadLetter(
                    null,
                    Outcome.rejected("idempotency key unreadable from " + keyExtractor.describe() + ": "
                            + e.getClass().getName() + ": " + e.getMessage()),
                    handlerAttempt);
        }
        if (key == null || key.isBlank()) {
            return deadLetter(
                    null,
                    Outcome.rejected("no idempotency key: " + keyExtractor.describe()
                            + " is missing or blank; the producer must stamp a key before the first send"),
                    handlerAttempt);
        }
        long start = System.nanoTime();
        Outcome outcome = run(key, message);
        Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
        if (elapsed.compareTo(consumeTimeout) > 0) {
            events.handlerTimeout(key, message, elapsed, consumeTimeout);
        }
        LOG.log(
                System.Logger.Level.DEBUG,
                () -> message.getTopic() + "-" + message.getQueueId() + "@" + message.getQueueOffset() + " attempt "
                        + handlerAttempt + ": " + outcome);
        return switch (outcome.action()) {
            case ACK -> new Decision(Decision.Verb.ACK, outcome, key, handlerAttempt, Duration.ZERO);
            case DEAD_LETTER -> deadLetter(key, outcome, handlerAttempt);
            case RETRY -> retry(key, outcome, handlerAttempt);
        };
    }

    private Decision retry(String key, Outcome outcome, int handlerAttempt) {
        Duration delay = retryDelay(outcome, handlerAttempt);
        if (outcome.type() == Outcome.Type.IN_PROGRESS) {
            return new Decision(Decision.Verb.WAIT, outcome, key, handlerAttempt, delay);
        }
        if (retryPolicy.exhausted(handlerAttempt)) {
            return deadLetter(
                    key,
                    outcome.withReason("gave up after " + handlerAttempt + " attempts; last: " + outcome.reason()),
                    handlerAttempt);
        }
        return new Decision(Decision.Verb.RETRY, outcome, key, handlerAttempt, delay);
    }

    /**
     * The policy's backoff, but never later than the outcome's own {@code retryAfter} (for {@code IN_PROGRESS}: when
     * the holder's lease ends); the holder usually finishes well before that.
     */
    private Duration retryDelay(Outcome outcome, int attempt) {
        Duration backoff = retryPolicy.delayAfter(attempt);
        return outcome.retryAfter()
                .filter(after -> after.compareTo(backoff) < 0)
                .orElse(backoff);
    }

    private static Decision deadLetter(@Nullable String key, Outcome outcome, int attempt) {
        return new Decision(Decision.Verb.DEAD_LETTER, outcome, key, attempt, Duration.ZERO);
    }

    private Outcome run(String key, MessageExt message) {
        try {
            return Objects.requireNonNull(handler.handle(key, message), "a handler must return an Outcome, not null");
        } catch (Exception e) {
            return Outcome.ofException(e);
        } finally {
            // An interrupt aimed at this handler (kept by it, or by Outcome.ofException) must not fail the copies
            // sent for this message, nor hit the next message this consume thread handles.
            Thread.interrupted();
        }
    }
}
