package dev.idem.rabbitmq;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyException;
import dev.idem.IdempotencyKey;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import dev.idem.internal.SafeListener;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * The adapter's events, source {@value #SOURCE}, namespace the work queue: {@code COMMITTED} (acked), {@code
 * RETRY_SCHEDULED}, {@code DEAD_LETTERED}, each with the outcome and the attempt. A listener that throws is logged.
 */
final class RabbitEvents {
    static final String SOURCE = "rabbitmq";
    private final SafeListener listener;
    private final String queue;

    RabbitEvents(IdempotencyListener listener, String queue) {
        this.listener = new SafeListener(listener);
        this.queue = queue;
    }

    void committed(@Nullable String key, Outcome outcome, int attempt) {
        tell(IdempotencyEvent.Type.COMMITTED, key, outcome, attempt, "acked");
    }

    void retryScheduled(@Nullable String key, Outcome outcome, int attempt, Duration delay, String retryQueue) {
        tell(
                IdempotencyEvent.Type.RETRY_SCHEDULED,
                key,
                outcome,
                attempt,
                "back in " + delay.toMillis() + " ms through " + retryQueue);
    }

    void deadLettered(@Nullable String key, Outcome outcome, int attempt, String exchange) {
        tell(IdempotencyEvent.Type.DEAD_LETTERED, key, outcome, attempt, "to " + exchange + ": " + outcome.reason());
    }

    private void tell(IdempotencyEvent.Type type, @Nullable String key, Outcome outcome, int attempt, String message) {
        if (!listener.listens()) {
            return;
        }
        IdempotencyEvent event = IdempotencyEvent.builder(type, queue)
                .source(SOURCE)
                .outcome(outcome)
                .attempt(attempt)
                .keyLogId(logId(key))
                .message(message)
                .build();
        listener.onEvent(event);
    }

    /** The key's {@link IdempotencyKey#logId()} under the queue's name: never the raw key. */
    private String logId(@Nullable String key) {
        if (key == null || key.isBlank()) {
            return "<no key>";
        }
        try {
            return IdempotencyKey.of(queue, key).logId();
        } catch (IdempotencyException e) { // a key or a queue name the core refuses: no hash to show
            return "<invalid>";
        }
    }
}
