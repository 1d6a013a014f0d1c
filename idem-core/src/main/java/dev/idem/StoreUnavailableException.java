package dev.idem;

import org.jspecify.annotations.Nullable;

/**
 * The store could not be reached or did not answer in time. The outcome of the operation is unknown; the
 * message must be retried later.
 */
public class StoreUnavailableException extends RetryLaterException {
    private static final long serialVersionUID = 1L;

    private final String store;

    public StoreUnavailableException(String store, String message, @Nullable Throwable cause) {
        super(store + " unavailable: " + message + " (the message will be retried later; check the store)", cause);
        this.store = store;
    }

    /** A short description of the store, e.g. {@code "redis 127.0.0.1:6379"}. */
    public String store() {
        return store;
    }
}
