package dev.idem.spring;

import dev.idem.Outcome;
import dev.idem.RetryLaterException;
import java.time.Duration;
import java.util.Optional;

/**
 * An {@link Idempotent} method did not run to an end that may be acknowledged: the message must be delivered again
 * later. Carries the outcome and its delay hint. The two kinds are separate classes so that an error handler can
 * treat them differently: {@link InProgressException} is retried without bound, {@link NotYetAppliedException} within
 * the retry policy.
 */
public abstract sealed class IdempotentRetryLaterException extends RetryLaterException
        permits InProgressException, NotYetAppliedException {
    private static final long serialVersionUID = 1L;

    private final String namespace;
    private final transient Outcome outcome;

    IdempotentRetryLaterException(String namespace, Outcome outcome) {
        super(
                "namespace '" + namespace + "': " + outcome.type() + " (" + outcome.reason()
                        + "); the message must be delivered again later",
                outcome.cause().orElse(null));
        this.namespace = namespace;
        this.outcome = outcome;
    }

    /** The namespace of the {@link Idempotent} method. */
    public String namespace() {
        return namespace;
    }

    /** The guard's outcome ({@code IN_PROGRESS}, {@code OUT_OF_ORDER} or {@code FAILED}). */
    public Outcome outcome() {
        return outcome;
    }

    /** The delay the guard suggests before the next delivery, if it has one. */
    public Optional<Duration> retryAfter() {
        return outcome.retryAfter();
    }

    /** The exception for a retry outcome: {@link InProgressException} for {@code IN_PROGRESS}, else {@link NotYetAppliedException}. */
    public static IdempotentRetryLaterException of(String namespace, Outcome outcome) {
        if (outcome.action() != Outcome.Action.RETRY) {
            throw new IllegalArgumentException("not a retry outcome: " + outcome);
        }
        return outcome.type() == Outcome.Type.IN_PROGRESS
                ? new InProgressException(namespace, outcome)
                : new NotYetAppliedException(namespace, outcome);
    }
}
