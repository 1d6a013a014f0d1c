package dev.idem.outbox;

import dev.idem.RetryPolicy;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.IntSupplier;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The relay's own thread: runs cycles while the relay is open, pauses for the poll interval when a cycle found less
 * than a full batch (less when {@link #wake()} reports a commit, as its {@link IdleHandshake} says, or when work it
 * knows of comes due), and backs off after a cycle that failed.
 */
final class RelayLoop {
    private static final System.Logger LOG = System.getLogger(OutboxRelay.class.getName());

    private final String relayId;
    private final IntSupplier cycle;
    private final int batchSize;
    private final Duration pollInterval;
    private final Supplier<Duration> untilDue;
    private final RetryPolicy backoff;
    private final OutboxListener listener;
    private final BooleanSupplier closed;
    private final Thread thread;
    private final Object signal = new Object();
    /** A commit was notified since the loop last looked (guarded by {@link #signal}). */
    private boolean woken;
    /** The thread was interrupted while it waited: it ends. */
    private volatile boolean interrupted;
    /** On PostgreSQL with a listener: tells the senders whether this relay waits to be woken. */
    private @Nullable IdleHandshake handshake;

    /**
     * @param cycle one cycle: publishes a batch (and purges when due); answers how many it published
     * @param untilDue how long until work the relay knows of comes due without a commit (its lease renewal, which takes
     *     the shards a crashed relay's leases held; a backed-off message's retry): an idle loop pauses no longer
     * @param closed whether the relay is closed: the loop ends, and a pause ends early once {@link #stop} says so
     */
    RelayLoop(
            String relayId,
            IntSupplier cycle,
            int batchSize,
            Duration pollInterval,
            Supplier<Duration> untilDue,
            RetryPolicy backoff,
            OutboxListener listener,
            BooleanSupplier closed) {
        this.relayId = relayId;
        this.cycle = cycle;
        this.batchSize = batchSize;
        this.pollInterval = pollInterval;
        this.untilDue = untilDue;
        this.backoff = backoff;
        this.listener = listener;
        this.closed = closed;
        this.thread = new Thread(this::run, "idem-outbox-relay-" + relayId);
        thread.setDaemon(true);
    }

    /** Before {@link #start()}: the wake-up handshake with the senders. */
    void handshake(IdleHandshake handshake) {
        this.handshake = handshake;
    }

    void start() {
        thread.start();
    }

    /** A sender's commit was notified: an idle loop looks at once, a busy one does not pause after its cycle. */
    void wake() {
        synchronized (signal) {
            woken = true;
            signal.notifyAll();
        }
    }

    /**
     * Ends a pause at once (the relay is closed already) and waits for the thread: {@code wait}, then an interrupt and
     * up to 5 s more. Returns false when the thread is still held (by a publisher that ignores interrupts).
     */
    boolean stop(Duration wait) {
        synchronized (signal) {
            signal.notifyAll();
        }
        try {
            thread.join(wait.toMillis());
            if (thread.isAlive()) {
                thread.interrupt();
                thread.join(5_000);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return !thread.isAlive();
    }

    private void run() {
        long failures = 0;
        while (!closed.getAsBoolean() && !interrupted) {
            try {
                int published = cycle.getAsInt();
                failures = 0;
                IdleHandshake h = handshake;
                if (published >= batchSize) {
                    if (h != null) {
                        h.busy();
                    }
                } else {
                    Duration idle = h == null ? pollInterval : h.pauseAfter(published, pollInterval);
                    Duration due = untilDue.get();
                    Duration pause = idle.compareTo(due) < 0 ? idle : due;
                    if (!pause.isZero()) {
                        pause(pause, true);
                    }
                }
            } catch (RuntimeException | Error e) {
                // An Error too (a publisher's NoClassDefFoundError, an OutOfMemoryError): with its thread ended, a
                // lone relay publishes nothing more while its process and its health look alive. What the broker
                // acknowledged before it is marked with the next cycle.
                failures++;
                listener.relayFailed(e);
                LOG.log(System.Logger.Level.WARNING, "relay {0}: {1}", relayId, e.getMessage());
                pause(backoff.delayAfter((int) Math.min(failures, 30)), false);
            }
        }
    }

    /** Waits {@code d} or until closed; {@code wakeable}: or until a commit is notified, which it then consumes. */
    private void pause(Duration d, boolean wakeable) {
        long deadline = System.nanoTime() + d.toNanos();
        synchronized (signal) {
            try {
                while (!closed.getAsBoolean() && !(wakeable && woken)) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        break;
                    }
                    signal.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                interrupted = true;
            }
            if (wakeable) {
                woken = false;
            }
        }
    }
}
