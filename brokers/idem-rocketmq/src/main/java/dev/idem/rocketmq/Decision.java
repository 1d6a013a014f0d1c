package dev.idem.rocketmq;

import dev.idem.Outcome;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/** What to do with one handled message: its outcome, and the broker verb that follows from it. */
record Decision(Verb verb, Outcome outcome, @Nullable String key, int attempt, Duration delay) {

    enum Verb {
        /** Final: acknowledge. */
        ACK,
        /** Copy to the dead-letter queue with the reason, then acknowledge. */
        DEAD_LETTER,
        /** A handler attempt that did not finish: retry later, counted against the attempt bound. */
        RETRY,
        /** The key is held elsewhere ({@code IN_PROGRESS}): retry later, never counted, never dead-lettered. */
        WAIT
    }
}
