package dev.idem.kafka;

import java.util.List;

/**
 * What a runner's operator needs to know beyond {@link IdempotentKafkaConsumer#isRunning()}: whether records still
 * move. Immutable.
 *
 * @param state the runner's state
 * @param problems what keeps it from being {@link State#RUNNING}, readable (never a payload)
 */
public record Health(State state, List<String> problems) {
    public Health {
        problems = List.copyOf(problems);
    }

    /** The runner's state. */
    public enum State {
        /** {@code start()} was not called yet. */
        NOT_STARTED,
        /** Polling, and no handler runs longer than its timeout. */
        RUNNING,
        /** Polling, but a handler has run past the handler timeout (it was interrupted and has not returned). */
        STALLED,
        /** Stopped on an error: see {@link IdempotentKafkaConsumer#failure()}. */
        FAILED,
        /** Closed. */
        STOPPED
    }

    /** True only for {@link State#RUNNING}. */
    public boolean isHealthy() {
        return state == State.RUNNING;
    }
}
