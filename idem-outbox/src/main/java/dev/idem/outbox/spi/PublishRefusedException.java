package dev.idem.outbox.spi;

import dev.idem.IdempotencyException;
import org.jspecify.annotations.Nullable;

/**
 * The broker refused one record and would refuse it again (too large, unknown destination, not authorised, unroutable):
 * the relay counts it and parks the record at the retry policy's bound, with this reason.
 */
public final class PublishRefusedException extends IdempotencyException {
    private static final long serialVersionUID = 1L;

    public PublishRefusedException(String reason, @Nullable Throwable cause) {
        super(reason, cause);
    }
}
