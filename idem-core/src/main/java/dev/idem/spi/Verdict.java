package dev.idem.spi;

import dev.idem.Outcome;
import java.time.Duration;

/**
 * What a broker adapter does with one delivery, as {@link DeliveryDecision} decided it. The adapter only translates
 * it into its broker's verbs: {@link Ack} → ack / commit; {@link Retry} → have the message delivered again after
 * {@link Retry#delay()}, carrying {@link Retry#attempts()}; {@link DeadLetter} → copy it to the dead-letter place with
 * {@link DeadLetter#reason()}, then ack.
 */
public sealed interface Verdict {
    /** The outcome the verdict follows from. */
    Outcome outcome();

    /** The message is finished with ({@code PROCESSED}, {@code DUPLICATE}). */
    record Ack(Outcome outcome) implements Verdict {}

    /**
     * Deliver the message again after {@code delay}. {@code counted} is false for {@code IN_PROGRESS} (the key is held
     * elsewhere, or a store or database cannot be reached): such a retry is never bounded and never dead-lettered.
     * {@code attempts} are the counts to hand to the decision at the next delivery.
     */
    record Retry(Outcome outcome, Duration delay, boolean counted, Attempts attempts) implements Verdict {}

    /** Copy the message to the dead-letter place with {@link #reason()}, then ack it. */
    record DeadLetter(Outcome outcome, Attempts attempts) implements Verdict {
        /** Why the message is dead-lettered: readable, never the payload. */
        public String reason() {
            return outcome.reason();
        }
    }
}
