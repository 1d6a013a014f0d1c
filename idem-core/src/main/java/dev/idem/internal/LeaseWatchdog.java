package dev.idem.internal;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.IdempotencyListener;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.UpdateResult;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

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
    private final long periodNanos;
    /** The watches of running handlers, each renewed every period from its start. */
    private final Set<Watch> live = ConcurrentHashMap.newKeySet();
    /** True while a sweep is scheduled (or running): at most one per watchdog. */
    private final AtomicBoolean sweepScheduled = new AtomicBoolean();

    public LeaseWatchdog(IdempotencyStore store, String source, IdempotencyListener listener, Duration lease) {
        this.store = store;
        this.source = source;
        this.listener = listener;
        this.lease = lease;
        this.periodNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(1, lease.toMillis() / 3));
    }

    /**
     * Starts extending {@code owner}'s lease on {@code key} every third of the lease, from now, until the returned
     * watch is closed. Registering and closing a watch touch no thread: one sweep per watchdog, scheduled for the
     * earliest renewal due, serves every watch (a handler shorter than a third of the lease costs the scheduler
     * nothing, instead of a task scheduled, a wake-up of its thread and a cancellation per handling).
     */
    public Watch watch(IdempotencyKey key, String owner) {
        Watch watch = new Watch(this, key, owner, System.nanoTime() + periodNanos);
        live.add(watch);
        if (!sweepScheduled.get() && sweepScheduled.compareAndSet(false, true)) {
            Shared.SCHEDULER.schedule(this::sweep, periodNanos, TimeUnit.NANOSECONDS);
        }
        return watch;
    }

    /**
     * Renews every watch that is due (at a fixed rate: its next renewal is one period after the one due, as with
     * {@code scheduleAtFixedRate}), then schedules itself for the earliest renewal still to come, or stops when no
     * watch is left. Every watch of this watchdog has the same period, so a watch registered later is never due
     * before the earliest one this sweep saw.
     */
    private void sweep() {
        long next = Long.MAX_VALUE;
        try {
            long now = System.nanoTime();
            for (Watch w : live) {
                if (w.closed) {
                    continue;
                }
                if (w.due - now <= 0) {
                    tick(w.key, w.owner, w);
                    w.due += periodNanos;
                }
                if (!w.closed && (next == Long.MAX_VALUE || w.due - next < 0)) {
                    next = w.due;
                }
            }
        } finally {
            reschedule(next);
        }
    }

    private void reschedule(long next) {
        if (next != Long.MAX_VALUE) {
            Shared.SCHEDULER.schedule(this::sweep, Math.max(0, next - System.nanoTime()), TimeUnit.NANOSECONDS);
            return;
        }
        sweepScheduled.set(false);
        // a watch registered while this sweep ran may have seen it scheduled and left the scheduling to it
        if (!live.isEmpty() && sweepScheduled.compareAndSet(false, true)) {
            Shared.SCHEDULER.schedule(this::sweep, 0, TimeUnit.NANOSECONDS);
        }
    }

    /**
     * One renewal. Nothing may escape it, not even an {@link Error} (from the store, or from a listener told of a
     * failure): it would cut the sweep short, and the renewals of the other watches due in it would be late. The handler's thread, not this one, decides whether the process is crashing.
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
        private final LeaseWatchdog watchdog;
        private final IdempotencyKey key;
        private final String owner;
        /** When its next renewal is due ({@link System#nanoTime()}); read and advanced by the sweep only. */
        private long due;

        private volatile boolean closed;

        private Watch(LeaseWatchdog watchdog, IdempotencyKey key, String owner, long due) {
            this.watchdog = watchdog;
            this.key = key;
            this.owner = owner;
            this.due = due;
        }

        /** Stops the renewals; a renewal already under way finishes. Idempotent. */
        @Override
        public void close() {
            closed = true;
            watchdog.live.remove(this);
        }
    }
}
