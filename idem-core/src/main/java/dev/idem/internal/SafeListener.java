package dev.idem.internal;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyListener;

/** Calls a listener and swallows (logs) what it throws, so a broken listener never changes an outcome. */
public final class SafeListener implements IdempotencyListener {
    private static final System.Logger LOG = System.getLogger(SafeListener.class.getName());

    private final IdempotencyListener delegate;

    public SafeListener(IdempotencyListener delegate) {
        this.delegate = delegate;
    }

    /** False for {@link IdempotencyListener#NONE}: callers may skip building events nobody reads. */
    public boolean listens() {
        return delegate != IdempotencyListener.NONE;
    }

    @Override
    public void onEvent(IdempotencyEvent event) {
        try {
            delegate.onEvent(event);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "listener failed on " + event.type() + "; ignored", e);
        }
    }
}
