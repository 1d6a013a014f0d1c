package dev.idem.nats;

import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/** Reports the consumer's signals to the listener: retries scheduled, dead letters, confirmed acks. */
final class NatsEvents {
    static final String SOURCE = "nats";

    private final IdempotencyListener listener;
    private final String namespace;

    NatsEvents(IdempotencyListener listener, String namespace) {
        this.listener = listener;
        this.namespace = namespace;
    }

    void retryScheduled(@Nullable String key, Outcome outcome, int attempt, Duration delay) {}

    void deadLettered(@Nullable String key, Outcome outcome, int attempt) {}

    void committed(String key, Outcome outcome, int attempt) {}
}
