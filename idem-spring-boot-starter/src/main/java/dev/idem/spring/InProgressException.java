package dev.idem.spring;

import dev.idem.Outcome;

/**
 * {@code IN_PROGRESS}: another consumer holds the key right now, or the store cannot answer. Waiting is right and
 * giving up would lose the message, so error handlers retry it without an attempt bound (never dead-letter it).
 */
public final class InProgressException extends IdempotentRetryLaterException {
    private static final long serialVersionUID = 1L;

    InProgressException(String namespace, Outcome outcome) {
        super(namespace, outcome);
    }
}
