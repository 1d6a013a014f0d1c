package dev.idem.spring.kafka;

import dev.idem.Outcome;

/**
 * What the recoverer of Idem's error handler is given: the record's last exception (its cause) with the outcome of the
 * decision's dead-letter verdict, whose reason says why (e.g. "gave up after 10 attempts; last: ...").
 */
final class DeadLetteredException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final transient Outcome outcome;

    DeadLetteredException(Outcome outcome, Exception last) {
        super(outcome.type() + ": " + outcome.reason(), last);
        this.outcome = outcome;
    }

    Outcome outcome() {
        return outcome;
    }
}
