package dev.idem.internal;

import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import java.time.Duration;

/** Calls a listener and swallows (logs) what it throws, so a broken listener never changes an outcome. */
public final class SafeListener implements IdempotencyListener {
    private static final System.Logger LOG = System.getLogger(SafeListener.class.getName());

    private final IdempotencyListener delegate;

    public SafeListener(IdempotencyListener delegate) {
        this.delegate = delegate;
    }

    @Override
    public void onOutcome(String namespace, String keyLogId, Outcome outcome, Duration elapsed) {
        try {
            delegate.onOutcome(namespace, keyLogId, outcome, elapsed);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "listener failed on an outcome; ignored", e);
        }
    }

    @Override
    public void onWarning(Warning warning) {
        try {
            delegate.onWarning(warning);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "listener failed on a warning; ignored", e);
        }
    }
}
