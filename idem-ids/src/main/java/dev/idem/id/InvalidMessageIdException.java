package dev.idem.id;

import dev.idem.DeadLetterException;

/** A message id does not parse: it was not made by a generator of this format, or it was damaged on the way. */
public final class InvalidMessageIdException extends DeadLetterException {
    private static final long serialVersionUID = 1L;

    InvalidMessageIdException(String message) {
        super(message, null);
    }
}
