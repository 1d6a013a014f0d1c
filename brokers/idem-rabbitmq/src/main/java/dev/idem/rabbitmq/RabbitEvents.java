package dev.idem.rabbitmq;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import org.jspecify.annotations.Nullable;

/**
 * The adapter's events, source {@value #SOURCE}, namespace the work queue: {@code COMMITTED} (acked), {@code
 * RETRY_SCHEDULED}, {@code DEAD_LETTERED}, each with the outcome and the attempt. A listener that throws is logged.
 */
final class RabbitEvents {
    static final String SOURCE = "rabbitmq";
    private static final System.Logger LOG = System.getLogger(RabbitEvents.class.getName());

    private final IdempotencyListener listener;
    private final String queue;

    RabbitEvents(IdempotencyListener listener, String queue) {
        this.listener = listener;
        this.queue = queue;
    }

    void committed(String key, Outcome outcome, int attempt) {
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
        if (listener == IdempotencyListener.NONE) {
            return;
        }
        IdempotencyEvent event = IdempotencyEvent.builder(type, queue)
                .source(SOURCE)
                .outcome(outcome)
                .attempt(attempt)
                .keyLogId(key == null || key.isBlank() ? "<invalid>" : logId(key))
                .message(message)
                .build();
        try {
            listener.onEvent(event);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "listener failed on " + type + "; ignored", e);
        }
    }

    /** Like {@link IdempotencyKey#logId()}, with the queue for namespace: never the raw key. */
    private String logId(String key) {
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
            return queue + '/' + HexFormat.of().formatHex(hash).substring(0, 12);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
