package dev.idem.spring;

import dev.idem.DeadLetterException;
import dev.idem.Outcome;

/**
 * {@code REJECTED}: the message can never be handled as it is (no key, a key reused with another payload, an
 * impossible transition). Not retryable: dead-letter it with {@link #reason()}. Nothing was marked.
 */
public final class IdempotentRejectedException extends DeadLetterException {
    private static final long serialVersionUID = 1L;

    private final String namespace;
    private final transient Outcome outcome;

    IdempotentRejectedException(String namespace, Outcome outcome) {
        super(
                "namespace '" + namespace + "': rejected: " + outcome.reason(),
                outcome.cause().orElse(null));
        this.namespace = namespace;
        this.outcome = outcome;
    }

    /** The namespace of the {@link Idempotent} method. */
    public String namespace() {
        return namespace;
    }

    /** The guard's {@code REJECTED} outcome. */
    public Outcome outcome() {
        return outcome;
    }

    /** Why the message was rejected, as the guard said it. */
    public String reason() {
        return outcome.reason();
    }
}
