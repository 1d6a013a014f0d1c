package dev.idem.internal;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.IdempotencyListener;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.UpdateResult;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Extends the leases of running handlers every third of the lease. Every watchdog of the JVM schedules on one shared
 * daemon thread (200 guards, one thread); a renewal only waits for its store's {@code extend}, so a store whose calls
 * can hang must bound them (query or command timeouts), as every shipped store does.
 *
 * <p>A failed extension (whatever the store throws) is reported and retried at the next tick; only a store's answer
 * that the lease is no longer ours ends the renewals of a handling.
 */
public final class LeaseWatchdog {
    private static final System.Logger LOG = System.getLogger(LeaseWatchdog.class.getName());

    private final IdempotencyStore store;
    private final String source;
    private final IdempotencyListener listener;
    private final Duration lease;

    public LeaseWatchdog(IdempotencyStore store, String source, IdempotencyListener listener, Duration lease) {
        this.store = store;
        this.source = source;
        this.listener = listener;
        this.lease = lease;
    }

    /** Starts extending {@code owner}'s lease on {@code key} until the returned watch is closed. */
    public Watch watch(IdempotencyKey key, String owner) {
        long period = Math.max(1, lease.toMillis() / 3);
        Watch watch = new Watch();
        watch.future = Shared.SCHEDULER.scheduleAtFixedRate(
                () -> tick(key, owner, watch), period, period, TimeUnit.MILLISECONDS);
        if (watch.closed) {
            watch.close(); // closed by a first tick that ran before the future was set
        }
        return watch;
    }

    /**
     * One renewal. Nothing may escape it, not even an {@link Error} (from the store, or from a listener told of a
     * failure): the scheduler would cancel this periodic renewal for good, and the lease would lapse under the
     * running handler. The handler's thread, not this one, decides whether the process is crashing.
     */
    private void tick(IdempotencyKey key, String owner, Watch watch) {
        try {
            extend(key, owner, watch);
        } catch (Throwable t) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "lease extension of " + key.logId() + " failed, retried at the next" + " tick",
                    t);
        }
    }

    private void extend(IdempotencyKey key, String owner, Watch watch) {
        UpdateResult result;
        try {
            result = store.extend(key, owner, lease);
        } catch (RuntimeException | Error e) {
            String detail = e instanceof StoreUnavailableException ? e.getMessage() : e.toString();
            report(
                    IdempotencyEvent.Type.STORE_UNAVAILABLE,
                    key,
                    "lease extension failed, retried at the next tick: " + detail);
            return;
        }
        if (result != UpdateResult.APPLIED && !watch.closed) {
            // (a tick still running when its handling completed or released sees NOT_OWNER/NOT_FOUND: not a loss)
            report(
                    IdempotencyEvent.Type.LEASE_LOST,
                    key,
                    "lease could not be extended (" + result + ") while the handler still runs");
            watch.close();
        }
    }

    private void report(IdempotencyEvent.Type type, IdempotencyKey key, String message) {
        LOG.log(System.Logger.Level.WARNING, "{0} {1}: {2}", type, key.logId(), message);
        listener.onEvent(IdempotencyEvent.builder(type, key.namespace())
                .guardKind(IdempotencyEvent.GuardKind.LEASE)
                .source(source)
                .keyLogId(key.logId())
                .message(message)
                .build());
    }

    /** The one scheduler, created on first use. Its thread is a daemon: it never keeps the JVM alive. */
    private static final class Shared {
        static final ScheduledThreadPoolExecutor SCHEDULER = create();

        private static ScheduledThreadPoolExecutor create() {
            var scheduler = new ScheduledThreadPoolExecutor(1, r -> {
                Thread t = new Thread(r, "idem-lease-watchdog");
                t.setDaemon(true);
                return t;
            });
            scheduler.setRemoveOnCancelPolicy(true);
            return scheduler;
        }
    }

    /** One running handler's lease extension. */
    public static final class Watch implements AutoCloseable {
        private volatile @Nullable ScheduledFuture<?> future;
        private volatile boolean closed;

        @Override
        public void close() {
            closed = true;
            ScheduledFuture<?> f = future;
            if (f != null) {
                f.cancel(false);
            }
        }
    }
}
