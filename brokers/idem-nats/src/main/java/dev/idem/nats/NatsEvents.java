package dev.idem.nats;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyException;
import dev.idem.IdempotencyKey;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import dev.idem.internal.SafeListener;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * Reports the consumer's signals to its listener as {@link IdempotencyEvent}s with source {@value #SOURCE}: a
 * scheduled retry (nak with delay), a dead letter (stored, then terminated), a confirmed ack. A listener that throws is
 * logged and ignored.
 */
final class NatsEvents {
    static final String SOURCE = "nats";
    private final SafeListener listener;
    private final String namespace;

    /** @param namespace the durable consumer's name, under which keys are hashed for their log id */
    NatsEvents(IdempotencyListener listener, String namespace) {
        this.listener = new SafeListener(listener);
        this.namespace = namespace;
    }

    void retryScheduled(@Nullable String key, Outcome outcome, int attempt, Duration delay) {
        emit(
                IdempotencyEvent.Type.RETRY_SCHEDULED,
                key,
                outcome,
                attempt,
                "nak with delay " + delay.toMillis() + " ms");
    }

    /** @param withData false: the dead letter names the original, whose data stays in its stream */
    void deadLettered(@Nullable String key, Outcome outcome, int attempt, String subject, boolean withData) {
        emit(
                IdempotencyEvent.Type.DEAD_LETTERED,
                key,
                outcome,
                attempt,
                "published to " + subject + (withData ? "" : " without its data (too large; kept in its stream)")
                        + ", then term");
    }

    /**
     * A message too large to dead-letter with its data, in a stream whose retention a term would delete it from: a
     * RETRY_SCHEDULED event with the outcome that dead-letters it, at each delivery.
     */
    void keptPendingWithoutDeadLetter(
            @Nullable String key, Outcome outcome, int attempt, String subject, Duration delay) {
        emit(
                IdempotencyEvent.Type.RETRY_SCHEDULED,
                key,
                outcome,
                attempt,
                "too large to dead-letter with its data: published to " + subject + " without it, and kept pending"
                        + " (a term would delete it from its stream); nak with delay " + delay.toMillis() + " ms");
    }

    void committed(@Nullable String key, Outcome outcome, int attempt) {
        emit(IdempotencyEvent.Type.COMMITTED, key, outcome, attempt, "ack confirmed by the server");
    }

    private void emit(IdempotencyEvent.Type type, @Nullable String key, Outcome outcome, int attempt, String message) {
        if (!listener.listens()) {
            return;
        }
        listener.onEvent(IdempotencyEvent.builder(type, namespace)
                .source(SOURCE)
                .outcome(outcome)
                .attempt(attempt)
                .keyLogId(logId(key))
                .message(message)
                .build());
    }

    private String logId(@Nullable String key) {
        if (key == null) {
            return "<no key>";
        }
        try {
            return IdempotencyKey.of(namespace, key).logId();
        } catch (IdempotencyException e) { // a key or a durable name the core refuses: no hash to show
            return "<invalid>";
        }
    }
}
