package dev.idem.outbox;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * The relay's side of the wake-up on PostgreSQL ({@link OutboxSql#insertNotifying}). A relay that is finding messages
 * looks again after {@link #LOOK_AGAIN} without being woken, and says so, so that senders skip the notification (and
 * the cluster-wide lock it holds through their commit). One that finds nothing says it waits, so that senders wake it,
 * and, each time its listener takes the waiting lock (the first time, and again after a lost listen session), makes
 * sure that no sender that skipped the notification is still in its transaction and looks a last time: nothing
 * committed meanwhile waits for the poll. Not thread-safe: the relay's thread uses it.
 */
final class IdleHandshake {
    /** How soon a relay that found messages, or that is not yet sure to be woken, looks again. */
    static final Duration LOOK_AGAIN = Duration.ofMillis(2);

    private final CommitNotifications notifications;
    private final BooleanSupplier sendersGone;
    private boolean waiting;
    /** The taking of the waiting lock ({@link CommitNotifications#waitingTaken()}) the last look followed. */
    private long lookedAfter;

    /**
     * @param sendersGone true when no sender that skipped its notification is still in its transaction
     */
    IdleHandshake(CommitNotifications notifications, BooleanSupplier sendersGone) {
        this.notifications = notifications;
        this.sendersGone = sendersGone;
    }

    /** The cycle published a full batch: the relay looks again at once, senders need not wake it. */
    void busy() {
        if (waiting) {
            notifications.waiting(false);
            waiting = false;
        }
    }

    /**
     * How long to pause after a cycle that published {@code published} messages, less than a full batch; zero: look
     * once more at once.
     */
    Duration pauseAfter(int published, Duration pollInterval) {
        Duration soon = LOOK_AGAIN.compareTo(pollInterval) < 0 ? LOOK_AGAIN : pollInterval;
        if (published > 0) {
            busy();
            return soon;
        }
        if (!waiting) {
            notifications.waiting(true);
            waiting = true;
        }
        long taken = notifications.waitingTaken();
        if (taken == 0) {
            // Senders do not notify yet. Not listening: the poll looks, and the listener wakes the relay once it is
            // back and waits.
            return notifications.listening() ? soon : pollInterval;
        }
        if (taken == lookedAfter) {
            return pollInterval;
        }
        if (sendersGone.getAsBoolean()) {
            lookedAfter = taken;
            return Duration.ZERO;
        }
        return soon;
    }
}
