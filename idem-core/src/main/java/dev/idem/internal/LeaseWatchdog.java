package dev.idem.internal;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.IdempotencyListener;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spi.UpdateResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;

/**
 * Extends the leases of running handlers: each a third of the lease after its claim and then every third, checked every
 * sixth of the lease and at least every second (so each extension comes between a third and a half of the lease after
 * the one before, and a failed one is retried at a later check). Every watchdog of the JVM sweeps on one shared daemon
 * thread (200 guards, one thread) and renews on shared ones; a renewal only waits for its store's {@code extend},
 * so a store whose calls can hang must bound them (query or command timeouts), as every shipped store does.
 *
 * <p>Starting and ending a watch only adds it to and removes it from a set: a handling that ends within a third of the
 * lease never touches the scheduler (scheduling and cancelling a task per handling woke the shared thread every time,
 * a tenth of the CPU of a lease-store handling on two cores). A watchdog's sweep runs while it has watches and stops
 * at the first sweep that finds none; the next watch starts it again.
 *
 * <p>The sweeps hand each due extension to a shared renewer thread of its own (idle ones are reused; one extension at a
 * time per handling, so never more threads than running handlings, at most {@code Shared.MAX_RENEWERS}): an extension
 * that waits for its store delays no other. A failed extension (whatever the store throws) is reported and retried at
 * a later sweep, {@link #FAILED_AT_ONCE} at a time per watchdog, the longest untried first; only a store's answer that
 * the lease is no longer ours ends the renewals of a handling.
 */
public final class LeaseWatchdog {
    private static final System.Logger LOG = System.getLogger(LeaseWatchdog.class.getName());
    /**
     * Extensions of one watchdog retried at once after a failure: a failed one is likely to wait its store's whole
     * bound again (a row another transaction holds, a store that does not answer), and many at once would take the
     * renewers and the store's connections the others need.
     */
    private static final int FAILED_AT_ONCE = 2;

    private final IdempotencyStore store;
    private final String source;
    private final IdempotencyListener listener;
    private final Duration lease;
    private final long renewEveryNanos;
    private final long sweepEveryMillis;
    private final Set<Watch> running = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean sweeping = new AtomicBoolean();
    private final AtomicInteger failedInFlight = new AtomicInteger();

    public LeaseWatchdog(IdempotencyStore store, String source, IdempotencyListener listener, Duration lease) {
        this.store = store;
        this.source = source;
        this.listener = listener;
        this.lease = lease;
        this.renewEveryNanos = lease.toNanos() / 3;
        // at most a second: an idle watchdog's sweep (holding the watchdog and its store) ends within a second
        this.sweepEveryMillis = Math.max(1, Math.min(lease.toMillis() / 6, 1000));
    }

    /** Starts extending {@code owner}'s lease on {@code key} until the returned watch is closed. */
    public Watch watch(IdempotencyKey key, String owner) {
        Watch watch = new Watch(key, owner, System.nanoTime() + renewEveryNanos);
        running.add(watch);
        if (sweeping.compareAndSet(false, true)) {
            try {
                new Sweep().start();
            } catch (RuntimeException | Error e) { // no sweep was scheduled: let the next watch start one
                running.remove(watch);
                sweeping.set(false);
                throw e;
            }
        }
        return watch;
    }

    /** The periodic pass over this watchdog's running handlings; it ends itself when it finds none. */
    private final class Sweep implements Runnable {
        private volatile @Nullable ScheduledFuture<?> future;
        private volatile boolean stopped;

        void start() {
            future = Shared.SCHEDULER.scheduleAtFixedRate(
                    this, sweepEveryMillis, sweepEveryMillis, TimeUnit.MILLISECONDS);
            if (stopped) {
                stop(); // stopped by a first run before the future was set
            }
        }

        /**
         * Nothing may escape a run, not even an {@link Error} (from the store, or from a listener told of a failure):
         * the scheduler would end this sweep for good while it still counts as running, and every lease of this
         * watchdog would lapse under its handler. The handler's thread, not this one, decides whether the process is
         * crashing.
         */
        @Override
        public void run() {
            try {
                sweep();
            } catch (Throwable t) {
                // nothing may end this sweep (see above); renew() already contains each watch's failure
            }
        }

        private void sweep() {
            if (stopped) {
                return;
            }
            if (running.isEmpty()) {
                sweeping.set(false);
                // a watch added since the check above found the flag still set and started no sweep: keep this one
                if (running.isEmpty() || !sweeping.compareAndSet(false, true)) {
                    stop();
                    return;
                }
            }
            List<Watch> failed = new ArrayList<>();
            for (Watch watch : running) {
                if (due(watch)) {
                    if (watch.failing) {
                        failed.add(watch);
                    } else {
                        hand(watch);
                    }
                }
            }
            failed.sort(Comparator.comparingLong(w -> w.tried));
            for (Watch watch : failed) {
                if (failedInFlight.get() >= FAILED_AT_ONCE) {
                    return;
                }
                hand(watch);
            }
        }

        private boolean due(Watch watch) {
            return !watch.closed && reached(watch.due) && !watch.queued.get();
        }

        /** Hands {@code watch}'s extension to a renewer, unless it is no longer due once taken (one ran meanwhile). */
        private void hand(Watch watch) {
            if (!watch.queued.compareAndSet(false, true)) {
                return;
            }
            if (!reached(watch.due)) {
                watch.queued.set(false);
                return;
            }
            boolean failing = watch.failing;
            if (failing) {
                failedInFlight.incrementAndGet();
            }
            try {
                Shared.RENEWERS.execute(() -> renewQueued(watch, failing));
            } catch (RuntimeException | Error e) { // no thread could be had: the next sweep tries again
                if (failing) {
                    failedInFlight.decrementAndGet();
                }
                watch.queued.set(false);
            }
        }

        private boolean reached(long due) {
            return System.nanoTime() - due >= 0;
        }

        private void stop() {
            stopped = true;
            ScheduledFuture<?> f = future;
            if (f != null) {
                f.cancel(false);
            }
        }
    }

    /**
     * The extension of a due watch, on a renewer thread of its own; the pause is asked here, not on the shared sweep
     * thread, where a slow condition would hold up every guard's renewals. A failed extension keeps its due time: it
     * is retried at a later sweep, not a third later.
     */
    private void renewQueued(Watch watch, boolean failing) {
        try {
            if (!watch.closed && !watch.paused()) {
                watch.tried = System.nanoTime();
                watch.failing = !renew(watch);
                if (!watch.failing) {
                    watch.due = System.nanoTime() + renewEveryNanos;
                }
            }
        } catch (Throwable t) {
            // nothing may escape (see the sweep's run); renew() already contains each watch's failure
        } finally {
            if (failing) {
                failedInFlight.decrementAndGet();
            }
            watch.queued.set(false);
        }
    }

    /** One extension; true when the store answered (whatever it answered), false when it must be retried. */
    private boolean renew(Watch watch) {
        try {
            return extend(watch);
        } catch (Throwable t) {
            try {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "lease extension of " + watch.key.logId() + " failed, retried at the next sweep",
                        t);
            } catch (Throwable logging) {
                // the log line itself failed (out of memory, a throwable that cannot be printed): retry anyway
            }
            return false;
        }
    }

    private boolean extend(Watch watch) {
        UpdateResult result;
        try {
            result = store.extend(watch.key, watch.owner, lease);
        } catch (RuntimeException | Error e) {
            String detail = e instanceof StoreUnavailableException ? e.getMessage() : e.toString();
            report(
                    IdempotencyEvent.Type.STORE_UNAVAILABLE,
                    watch.key,
                    "lease extension failed, retried at the next sweep: " + detail);
            return false;
        }
        if (result != UpdateResult.APPLIED && !watch.closed) {
            // (a renewal still running when its handling completed or released sees NOT_OWNER/NOT_FOUND: not a loss)
            watch.close(); // first: a listener that throws must not keep a lost lease renewed and reported again
            report(
                    IdempotencyEvent.Type.LEASE_LOST,
                    watch.key,
                    "lease could not be extended (" + result + ") while the handler still runs");
        }
        return true;
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

    /**
     * The one scheduler of the sweeps and the renewers of every watchdog of the JVM, created on first use. Their
     * threads are daemons: they never keep the JVM alive. A renewal runs at once on an idle renewer or a new one
     * (gone after 10 s idle): extensions waiting for their store up to its bound each never queue the others behind
     * them (twenty rows held by other transactions, renewed one after the other, cost a 2 s lease every other
     * handling's renewals; four threads in priority order, twenty-four first tries of 400 ms). Beyond {@link
     * #MAX_RENEWERS} extensions at once, the next sweep tries again.
     */
    private static final class Shared {
        static final int MAX_RENEWERS = 256;
        static final ScheduledThreadPoolExecutor SCHEDULER = create();
        static final ThreadPoolExecutor RENEWERS = renewers();

        private static ThreadPoolExecutor renewers() {
            return new ThreadPoolExecutor(
                    0,
                    MAX_RENEWERS,
                    10,
                    TimeUnit.SECONDS,
                    new SynchronousQueue<>(),
                    Daemons.named("idem-lease-renewer"));
        }

        private static ScheduledThreadPoolExecutor create() {
            var scheduler = new ScheduledThreadPoolExecutor(1, Daemons.named("idem-lease-watchdog"));
            scheduler.setRemoveOnCancelPolicy(true);
            return scheduler;
        }
    }

    /** One running handler's lease extension. */
    public final class Watch implements AutoCloseable {
        private final IdempotencyKey key;
        private final String owner;
        private volatile long due;
        private volatile boolean closed;
        /** Whether an extension is handed over or running (one at a time per watch). */
        private final AtomicBoolean queued = new AtomicBoolean();
        /** Whether the last extension failed, and when it was tried (by its renewer; read by the sweep). */
        private volatile boolean failing;

        private volatile long tried;

        private volatile BooleanSupplier pausedWhile = () -> false;

        private Watch(IdempotencyKey key, String owner, long due) {
            this.key = key;
            this.owner = owner;
            this.due = due;
        }

        /**
         * Skips the renewals that fall due while {@code condition} holds (each is tried again at the next sweep); a
         * condition that throws counts as false.
         */
        public void pauseWhile(BooleanSupplier condition) {
            pausedWhile = condition;
        }

        private boolean paused() {
            try {
                return pausedWhile.getAsBoolean();
            } catch (RuntimeException e) {
                return false;
            }
        }

        @Override
        public void close() {
            closed = true;
            running.remove(this);
        }
    }
}
