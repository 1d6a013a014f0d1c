package dev.idem;

import org.jspecify.annotations.Nullable;

/**
 * Root of every exception Idem throws. Subclasses are named by what the caller must do: {@link
 * RetryLaterException}, {@link ConfigurationException}, {@link DeadLetterException}.
 */
public class IdempotencyException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public IdempotencyException(String message, @Nullable Throwable cause) {
        super(message, cause);
    }
}
