package dev.idem.spring;

import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import java.time.Duration;
import java.util.List;

/**
 * Every {@link IdempotencyListener} bean of the application (metrics, health, your own) as one listener, given to
 * every guard and store the starter builds. A listener that throws is logged and skipped; the others still run.
 */
public final class IdemListeners implements IdempotencyListener {
    private static final System.Logger LOG = System.getLogger(IdemListeners.class.getName());

    private final List<IdempotencyListener> listeners;

    public IdemListeners(List<IdempotencyListener> listeners) {
        this.listeners = List.copyOf(listeners);
    }

    @Override
    public void onOutcome(String namespace, String keyLogId, Outcome outcome, Duration elapsed) {
        for (IdempotencyListener l : listeners) {
            try {
                l.onOutcome(namespace, keyLogId, outcome, elapsed);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "listener " + l + " failed; ignored", e);
            }
        }
    }

    @Override
    public void onWarning(Warning warning) {
        for (IdempotencyListener l : listeners) {
            try {
                l.onWarning(warning);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "listener " + l + " failed; ignored", e);
            }
        }
    }
}
