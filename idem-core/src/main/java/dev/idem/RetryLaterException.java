package dev.idem;

import org.jspecify.annotations.Nullable;

/** Something transient broke: nothing was marked, so the message must be redelivered later, never acked. */
public class RetryLaterException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    public RetryLaterException(String message, @Nullable Throwable cause) {
        super(message, cause);
    }
}
