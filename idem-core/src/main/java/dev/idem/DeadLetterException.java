package dev.idem;

import org.jspecify.annotations.Nullable;

/** The message can never be handled as it is (bad key, bad payload): send it to a dead-letter destination. */
public class DeadLetterException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    public DeadLetterException(String message, @Nullable Throwable cause) {
        super(message, cause);
    }
}
