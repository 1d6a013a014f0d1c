package dev.idem.spring.outbox;

import dev.idem.outbox.OutboxListener;
import dev.idem.outbox.spi.OutboxRecord;
import java.time.Instant;
import java.util.List;
import java.util.function.Consumer;

/**
 * Every {@link OutboxListener} bean of the application (alerts, audit, your own) as the relay's one listener. A
 * listener that throws is logged and skipped; the others still hear the event.
 */
final class OutboxListeners implements OutboxListener {
    private static final System.Logger LOG = System.getLogger(OutboxListeners.class.getName());

    private final List<OutboxListener> listeners;

    OutboxListeners(List<OutboxListener> listeners) {
        this.listeners = List.copyOf(listeners);
    }

    @Override
    public void published(List<OutboxRecord> records) {
        each("published", l -> l.published(records));
    }

    @Override
    public void publishFailed(OutboxRecord record, Throwable failure, boolean refused, Instant retryAt) {
        each("publishFailed", l -> l.publishFailed(record, failure, refused, retryAt));
    }

    @Override
    public void parked(OutboxRecord record, String reason) {
        each("parked", l -> l.parked(record, reason));
    }

    @Override
    public void relayFailed(Throwable failure) {
        each("relayFailed", l -> l.relayFailed(failure));
    }

    private void each(String event, Consumer<OutboxListener> call) {
        for (OutboxListener l : listeners) {
            try {
                call.accept(l);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "outbox listener " + l + " failed on " + event + "; ignored", e);
            }
        }
    }
}
