package dev.idem.outbox;

import dev.idem.outbox.spi.OutboxRecord;
import java.time.Instant;
import java.util.List;

/** The application's {@link OutboxListener}, called so that one that throws is logged and never breaks relaying. */
final class QuietListener implements OutboxListener {
    private static final System.Logger LOG = System.getLogger(OutboxRelay.class.getName());

    private final OutboxListener listener;

    QuietListener(OutboxListener listener) {
        this.listener = listener;
    }

    @Override
    public void published(List<OutboxRecord> records) {
        call(() -> listener.published(records));
    }

    @Override
    public void publishFailed(OutboxRecord record, Throwable failure, boolean refused, Instant retryAt) {
        call(() -> listener.publishFailed(record, failure, refused, retryAt));
    }

    @Override
    public void parked(OutboxRecord record, String reason) {
        call(() -> listener.parked(record, reason));
    }

    @Override
    public void relayFailed(Throwable failure) {
        call(() -> listener.relayFailed(failure));
    }

    private static void call(Runnable call) {
        try {
            call.run();
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "an OutboxListener threw; ignored", e);
        }
    }
}
