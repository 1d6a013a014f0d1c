package dev.idem.rocketmq;

import dev.idem.Outcome;
import dev.idem.spi.Attempts;
import dev.idem.spi.DeliveryDecision;
import dev.idem.spi.KeyBytes;
import dev.idem.spi.Verdict;
import java.time.Duration;
import java.util.Objects;
import org.apache.rocketmq.common.message.MessageExt;
import org.jspecify.annotations.Nullable;

/**
 * Runs the handler on one message with its key ({@link KeyBytes#exactText}: a key a decoder made from bytes that were
 * not UTF-8 is rejected, never taken for another key) and has {@link DeliveryDecision} settle the result.
 */
final class Handling {
    private static final System.Logger LOG = System.getLogger(Handling.class.getName());

    private final KeyExtractor keyExtractor;
    private final MessageHandler handler;
    private final DeliveryDecision decision;
    private final Duration consumeTimeout;
    private final Events events;

    Handling(
            KeyExtractor keyExtractor,
            MessageHandler handler,
            DeliveryDecision decision,
            Duration consumeTimeout,
            Events events) {
        this.keyExtractor = keyExtractor;
        this.handler = handler;
        this.decision = decision;
        this.consumeTimeout = consumeTimeout;
        this.events = events;
    }

    /** What one handled message comes to: the verdict, and the key when it could be read. */
    record Handled(Verdict verdict, @Nullable String key) {}

    /** Handles {@code message}, tried {@code before} already, and decides what follows. */
    Handled handle(MessageExt message, Attempts before) {
        String key;
        try {
            String read = keyExtractor.extract(message);
            key = read == null ? null : KeyBytes.exactText(read);
        } catch (Exception e) {
            return new Handled(
                    decision.decide(
                            Outcome.rejected("idempotency key unreadable from " + keyExtractor.describe() + ": "
                                    + e.getClass().getName() + ": " + e.getMessage()),
                            before),
                    null);
        }
        if (key == null || key.isBlank()) {
            return new Handled(
                    decision.decide(
                            Outcome.rejected("no idempotency key: " + keyExtractor.describe()
                                    + " is missing or blank; the producer must stamp a key before the first send"),
                            before),
                    null);
        }
        long start = System.nanoTime();
        Verdict verdict = run(key, message, before);
        Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
        if (elapsed.compareTo(consumeTimeout) > 0) {
            events.handlerTimeout(key, message, elapsed, consumeTimeout);
        }
        LOG.log(
                System.Logger.Level.DEBUG,
                () -> message.getTopic() + "-" + message.getQueueId() + "@" + message.getQueueOffset() + " after "
                        + before + ": " + verdict);
        return new Handled(verdict, key);
    }

    private Verdict run(String key, MessageExt message, Attempts before) {
        Verdict verdict;
        Exception thrown = null;
        try {
            Outcome outcome =
                    Objects.requireNonNull(handler.handle(key, message), "a handler must return an Outcome, not null");
            verdict = decision.decide(outcome, before);
        } catch (Exception e) {
            thrown = e;
            verdict = decision.decide(e, before);
        }
        // An interrupt aimed at this handler (kept by it) must not fail the copies sent for this message, nor hit the
        // next message this consume thread handles.
        boolean interrupted = Thread.interrupted();
        if (!(verdict instanceof Verdict.Ack) && (interrupted || interruptedIn(thrown))) {
            // Only the consumer's shutdown interrupts RocketMQ's consume threads (once
            // awaitTerminationMillisWhenShutdown
            // has passed): not the message's failure, so neither counted nor dead-lettered.
            return decision.decide(
                    Outcome.inProgress("the handler was interrupted by the consumer's shutdown", null), before);
        }
        return verdict;
    }

    private static boolean interruptedIn(@Nullable Throwable thrown) {
        for (Throwable t = thrown; t != null; t = t.getCause()) {
            if (t instanceof InterruptedException) {
                return true;
            }
        }
        return false;
    }
}
