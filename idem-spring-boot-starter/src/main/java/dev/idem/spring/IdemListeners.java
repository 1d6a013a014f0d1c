package dev.idem.spring;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyListener;
import java.util.List;

/**
 * Every {@link IdempotencyListener} bean of the application (metrics, health, your own) as one listener, given to
 * every guard, store and error handler the starter builds. A listener that throws is logged and skipped; the others
 * still run.
 */
public final class IdemListeners implements IdempotencyListener {
    private static final System.Logger LOG = System.getLogger(IdemListeners.class.getName());

    private final List<IdempotencyListener> listeners;

    public IdemListeners(List<IdempotencyListener> listeners) {
        this.listeners = List.copyOf(listeners);
    }

    @Override
    public void onEvent(IdempotencyEvent event) {
        for (IdempotencyListener l : listeners) {
            try {
                l.onEvent(event);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "listener " + l + " failed on " + event.type() + "; ignored", e);
            }
        }
    }
}
