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

/** Extends the leases of running handlers every third of the lease, on one daemon thread per guard. */
public final class LeaseWatchdog implements AutoCloseable {
    private final IdempotencyStore store;
    private final IdempotencyListener listener;
    private final Duration lease;
    private final ScheduledThreadPoolExecutor scheduler;

    public LeaseWatchdog(IdempotencyStore store, IdempotencyListener listener, Duration lease) {
        this.store = store;
        this.listener = listener;
        this.lease = lease;
        this.scheduler = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "idem-lease-watchdog");
            t.setDaemon(true);
            return t;
        });
        scheduler.setRemoveOnCancelPolicy(true);
    }

    /** Starts extending {@code owner}'s lease on {@code key} until the returned watch is closed. */
    public Watch watch(IdempotencyKey key, String owner) {
        long period = Math.max(1, lease.toMillis() / 3);
        Watch watch = new Watch();
        watch.future =
                scheduler.scheduleAtFixedRate(() -> extend(key, owner, watch), period, period, TimeUnit.MILLISECONDS);
        return watch;
    }

    private void extend(IdempotencyKey key, String owner, Watch watch) {
        try {
            UpdateResult result = store.extend(key, owner, lease);
            if (result != UpdateResult.APPLIED) {
                listener.onEvent(IdempotencyEvent.builder(IdempotencyEvent.Type.LEASE_LOST, key.namespace())
                        .guardKind(IdempotencyEvent.GuardKind.LEASE)
                        .source(store.describe())
                        .keyLogId(key.logId())
                        .message("lease could not be extended (" + result + ") while the handler still runs")
                        .build());
                watch.close();
            }
        } catch (StoreUnavailableException e) {
            // The next tick tries again; if the lease lapses meanwhile, completion reports it.
        }
    }

    @Override
    public void close() {
        scheduler.shutdownNow();
    }

    /** One running handler's lease extension. */
    public static final class Watch implements AutoCloseable {
        private volatile ScheduledFuture<?> future;

        @Override
        public void close() {
            ScheduledFuture<?> f = future;
            if (f != null) {
                f.cancel(false);
            }
        }
    }
}
