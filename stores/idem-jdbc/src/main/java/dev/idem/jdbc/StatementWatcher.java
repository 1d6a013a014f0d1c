package dev.idem.jdbc;

import dev.idem.internal.Daemons;
import java.sql.Statement;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * Cancels the statements it watches once their deadline has passed, from one daemon thread that looks every {@code
 * tick}: watching a statement costs an entry in a concurrent set, no wake-up of another thread. The thread ends after
 * {@code idleEnd} without anything to watch and starts again with the next statement; it survives what a cancel
 * throws and ignores interrupts, and if it ends otherwise the next statement, or the statements still watched, start
 * another.
 */
final class StatementWatcher {
    static final StatementWatcher SHARED = new StatementWatcher(Duration.ofMillis(50), Duration.ofSeconds(30));

    private static final System.Logger LOG = System.getLogger(StatementWatcher.class.getName());

    private final long tickNanos;
    private final long idleEndNanos;
    private final ThreadFactory threads;
    private final Set<Watch> watched = ConcurrentHashMap.newKeySet();
    private final Object lifecycle = new Object();
    private volatile boolean running;

    StatementWatcher(Duration tick, Duration idleEnd, ThreadFactory threads) {
        this.tickNanos = tick.toNanos();
        this.idleEndNanos = idleEnd.toNanos();
        this.threads = threads;
    }

    StatementWatcher(Duration tick, Duration idleEnd) {
        this(tick, idleEnd, Daemons.named("idem-statement-watcher"));
    }

    /** One statement under watch until {@link #close()}. */
    final class Watch implements LockWait {
        private final Statement statement;
        private final long deadline;

        private Watch(Statement statement, long deadline) {
            this.statement = statement;
            this.deadline = deadline;
        }

        @Override
        public void close() {
            watched.remove(this);
        }
    }

    /**
     * Watches {@code statement} until the returned watch is closed; cancels it if that is later than {@code limit}.
     * Null when no thread can be started to watch it (the JVM cannot create one now): the caller bounds it otherwise.
     */
    @Nullable
    Watch watch(Statement statement, Duration limit) {
        Watch watch = new Watch(statement, System.nanoTime() + limit.toNanos());
        watched.add(watch);
        if (!running && !start()) {
            watched.remove(watch);
            return null;
        }
        return watch;
    }

    boolean running() {
        return running;
    }

    /** Starts the thread unless one runs; false when it cannot be started. */
    private boolean start() {
        synchronized (lifecycle) {
            if (running) {
                return true;
            }
            try {
                threads.newThread(this::watchUntilIdle).start();
            } catch (RuntimeException | OutOfMemoryError e) {
                LOG.log(System.Logger.Level.WARNING, "could not start the statement watcher's thread", e);
                return false;
            }
            running = true;
            return true;
        }
    }

    private void watchUntilIdle() {
        boolean idle = false;
        try {
            idle = watchUntilIdleOrFailure();
        } finally {
            if (!idle) {
                synchronized (lifecycle) {
                    running = false;
                }
                if (!watched.isEmpty()) {
                    start();
                }
            }
        }
    }

    private boolean watchUntilIdleOrFailure() {
        long idleSince = System.nanoTime();
        while (true) {
            LockSupport.parkNanos(this, tickNanos);
            Thread.interrupted(); // an interrupt would end every later park at once
            long now = System.nanoTime();
            for (Watch watch : watched) {
                if (now - watch.deadline >= 0 && watched.remove(watch)) {
                    cancel(watch.statement);
                }
            }
            if (!watched.isEmpty()) {
                idleSince = now;
            } else if (now - idleSince >= idleEndNanos && stopUnlessWatching()) {
                return true;
            }
        }
    }

    /**
     * Stops when nothing is watched. {@code running} is cleared before the set is looked at again: a statement added
     * meanwhile either is seen here or saw {@code running} false and starts the next thread.
     */
    private boolean stopUnlessWatching() {
        synchronized (lifecycle) {
            running = false;
            if (watched.isEmpty()) {
                return true;
            }
            running = true;
            return false;
        }
    }

    /** Cancels {@code statement}; whatever that throws (an {@link Error} included) ends neither it nor the others. */
    private static void cancel(Statement statement) {
        try {
            statement.cancel();
        } catch (Throwable e) {
            try {
                LOG.log(System.Logger.Level.WARNING, "could not cancel a statement past its lock wait", e);
            } catch (Throwable logging) {
                // the log line itself failed (out of memory, a throwable that cannot be printed): watch on
            }
        }
    }
}
