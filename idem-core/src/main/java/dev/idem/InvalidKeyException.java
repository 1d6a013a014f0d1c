package dev.idem;

/** An idempotency key is blank, too long or holds control characters. */
public final class InvalidKeyException extends DeadLetterException {
    private static final long serialVersionUID = 1L;

    InvalidKeyException(String message) {
        super(message, null);
    }
}
