package dev.idem;

/** An idempotency key is blank, too long, or holds control characters or unpaired surrogates. */
public final class InvalidKeyException extends DeadLetterException {
    private static final long serialVersionUID = 1L;

    InvalidKeyException(String message) {
        super(message, null);
    }
}
