package dev.idem.spring;

import dev.idem.Outcome;

/**
 * {@code OUT_OF_ORDER} (the effect cannot apply yet) or {@code FAILED} (a transient failure, nothing marked): retried
 * with back-off, dead-lettered once the retry policy is exhausted.
 */
public final class NotYetAppliedException extends IdempotentRetryLaterException {
    private static final long serialVersionUID = 1L;

    NotYetAppliedException(String namespace, Outcome outcome) {
        super(namespace, outcome);
    }
}
