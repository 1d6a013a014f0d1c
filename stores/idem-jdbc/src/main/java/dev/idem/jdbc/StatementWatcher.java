package dev.idem.jdbc;

import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;

/**
 * Cancels the statements it watches once their deadline has passed, from one daemon thread that looks every {@link
 * #tick}: watching a statement costs an entry in a concurrent set, no wake-up of another thread. The thread ends
 * after {@link #idleEnd} without anything to watch and starts again with the next statement.
 */
final class StatementWatcher {
    static final StatementWatcher SHARED = new StatementWatcher(Duration.ofMillis(50), Duration.ofSeconds(30));

    private static final System.Logger LOG = System.getLogger(StatementWatcher.class.getName());

    private final long tickNanos;
    private final long idleEndNanos;
    private final Set<Watch> watched = ConcurrentHashMap.newKeySet();
    private final Object lifecycle = new Object();
    private volatile boolean running;

    StatementWatcher(Duration tick, Duration idleEnd) {
        this.tickNanos = tick.toNanos();
        this.idleEndNanos = idleEnd.toNanos();
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

    /** Watches {@code statement} until the returned watch is closed; cancels it if that is later than {@code limit}. */
    Watch watch(Statement statement, Duration limit) {
        Watch watch = new Watch(statement, System.nanoTime() + limit.toNanos());
        watched.add(watch);
        if (!running) {
            synchronized (lifecycle) {
                if (!running) {
                    running = true;
                    Thread thread = new Thread(this::watchUntilIdle, "idem-statement-watcher");
                    thread.setDaemon(true);
                    thread.start();
                }
            }
        }
        return watch;
    }

    boolean running() {
        return running;
    }

    private void watchUntilIdle() {
        long idleSince = System.nanoTime();
        while (true) {
            LockSupport.parkNanos(this, tickNanos);
            long now = System.nanoTime();
            for (Watch watch : watched) {
                if (now - watch.deadline >= 0 && watched.remove(watch)) {
                    cancel(watch.statement);
                }
            }
            if (!watched.isEmpty()) {
                idleSince = now;
            } else if (now - idleSince >= idleEndNanos && stopUnlessWatching()) {
                return;
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

    private static void cancel(Statement statement) {
        try {
            statement.cancel();
        } catch (SQLException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "could not cancel a statement past its lock wait", e);
        }
    }
}
