package dev.idem.outbox;

import dev.idem.RetryPolicy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * Wakes the relay when a sender's transaction commits, on PostgreSQL: {@code LISTEN} on a connection of its own (held
 * from the relay's data source while the relay runs) for what {@code Outbox.send} notifies. Senders notify only while
 * some relay says it waits ({@link #waiting(boolean)}: a shared advisory lock on this session, see {@link
 * OutboxSql#insertNotifying}). The relay's poll stays the fallback: a notification lost, a listen connection lost
 * (listened again after the relay's backoff, for as long as the relay runs), rows inserted by other code. Each
 * (re)connection wakes the relay once, for what committed while no one listened.
 */
final class CommitNotifications implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(CommitNotifications.class.getName());
    /** One wait for notifications: how soon {@link #close()} and a change of {@link #waiting} are seen. */
    private static final int WAIT_MILLIS = 10;
    /** Waits without a notification before the connection is checked (a silently dropped one never fails a wait). */
    private static final int WAITS_PER_CHECK = 1000;

    private final DataSource dataSource;
    private final String table;
    private final String channel;
    private final Runnable wake;
    private final RetryPolicy backoff;
    private final String relayId;
    private final Thread thread;
    private final Object stop = new Object();
    private volatile boolean closed;
    /** What the relay asked: wait for commits (senders notify) or not. Guarded by {@link #stop}. */
    private boolean wantWaiting;
    /** How many times this listener took the waiting lock. Guarded by {@link #stop}. */
    private long takings;
    /** Which taking of the waiting lock this listener's current session holds; 0: none. Guarded by {@link #stop}. */
    private long heldTaking;
    /** Whether this listener has a session (that listens). Guarded by {@link #stop}. */
    private boolean listening;

    private CommitNotifications(
            DataSource dataSource, String table, Runnable wake, RetryPolicy backoff, String relayId) {
        this.dataSource = dataSource;
        this.table = table;
        this.channel = OutboxSql.channel(table);
        this.wake = wake;
        this.backoff = backoff;
        this.relayId = relayId;
        this.thread = new Thread(this::run, "idem-outbox-listen-" + relayId);
        thread.setDaemon(true);
    }

    /** Starts listening for {@code table}'s commits; {@code wake} runs on each (from this listener's thread). */
    static CommitNotifications start(
            DataSource dataSource, String table, Runnable wake, RetryPolicy backoff, String relayId) {
        CommitNotifications listener = new CommitNotifications(dataSource, table, wake, backoff, relayId);
        listener.thread.start();
        return listener;
    }

    /**
     * The relay waits idle ({@code true}: senders are to notify) or is busy ({@code false}: they need not). Taken into
     * account within one wait ({@link #waitingTaken()}), and again after a lost connection.
     */
    void waiting(boolean waiting) {
        synchronized (stop) {
            wantWaiting = waiting;
        }
    }

    /**
     * Which taking of the waiting lock this listener's session holds (numbered from 1: senders notify since then), or
     * 0 when it holds none. Each taking wakes the relay: a sender that skipped its notification while the lock was not
     * held may still be in its transaction.
     */
    long waitingTaken() {
        synchronized (stop) {
            return heldTaking;
        }
    }

    /** Whether this listener has a session that listens (else the relay's poll looks). */
    boolean listening() {
        synchronized (stop) {
            return listening;
        }
    }

    /** Whether the PostgreSQL driver's notification API is there to listen with. */
    static boolean available() {
        try {
            Class.forName("org.postgresql.PGConnection", false, CommitNotifications.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    private void run() {
        int failures = 0;
        while (!closed) {
            try (Connection c = dataSource.getConnection()) {
                try {
                    PGConnection pg = listen(c);
                    checkASecondConnection();
                    failures = 0;
                    connected(true);
                    applyWaiting(c);
                    wake.run();
                    awaitNotifications(c, pg);
                } finally {
                    connected(false);
                    unlisten(c);
                }
            } catch (SQLException | RuntimeException e) {
                if (closed) {
                    return;
                }
                failures++;
                Duration pause = backoff.delayAfter(Math.min(failures, 30));
                LOG.log(
                        System.Logger.Level.WARNING,
                        "relay {0}: listening for commits on channel {1} failed ({2}); the poll relays meanwhile,"
                                + " listening again in {3}",
                        relayId,
                        channel,
                        e.getMessage(),
                        pause);
                sleep(pause);
            }
        }
    }

    /**
     * The relay's cycles take connections of the data source besides the one this listener holds for as long as it
     * listens: a pool that lends no other would stop the relay. Then this listener gives its connection back, and the
     * relay polls.
     */
    private void checkASecondConnection() throws SQLException {
        try {
            dataSource.getConnection().close();
        } catch (SQLException e) {
            throw new SQLException(
                    "the data source lends no connection besides the listener's (" + e.getMessage()
                            + "), which the relay's cycles need: give its pool one connection per relay more",
                    e);
        }
    }

    private PGConnection listen(Connection c) throws SQLException {
        c.setAutoCommit(true); // LISTEN in an open transaction would only take effect at its commit
        try (Statement s = c.createStatement()) {
            s.execute("LISTEN " + channel);
        }
        return c.unwrap(PGConnection.class);
    }

    /**
     * Stops listening and waiting before the connection goes back to its pool, so that it does not go on gathering
     * notifications for whoever borrows it next, nor make senders notify. Run through the pool's own connection: on a broken connection this fails where the
     * pool sees it, and the pool discards the connection rather than lend it (the waits ran on the driver's connection,
     * unseen by the pool).
     */
    private static void unlisten(Connection c) {
        try (Statement s = c.createStatement()) {
            s.execute("UNLISTEN *");
            s.execute("SELECT pg_advisory_unlock_all()"); // the waiting lock: senders stop notifying for this relay
            c.unwrap(PGConnection.class).getNotifications(); // drops what arrived before the UNLISTEN
        } catch (SQLException e) {
            // broken: the pool has seen it fail
        }
    }

    private void awaitNotifications(Connection c, PGConnection pg) throws SQLException {
        int quiet = 0;
        while (!closed) {
            applyWaiting(c);
            PGNotification[] notifications = pg.getNotifications(WAIT_MILLIS);
            if (notifications != null && notifications.length > 0) {
                quiet = 0;
                wake.run();
            } else if (++quiet >= WAITS_PER_CHECK) {
                quiet = 0;
                if (!c.isValid(5)) {
                    throw new SQLException("the listen connection no longer answers");
                }
            }
        }
    }

    /**
     * Takes or gives back the waiting lock on this session, as the relay last asked. Takes it without waiting: a sender
     * holds it exclusively only for an instant (see {@link OutboxSql#insertNotifying}); the next wait tries again.
     */
    private void applyWaiting(Connection c) throws SQLException {
        boolean want;
        boolean holds;
        synchronized (stop) {
            want = wantWaiting;
            holds = heldTaking != 0;
        }
        if (want == holds) {
            return;
        }
        if (!want) {
            synchronized (stop) {
                heldTaking = 0; // before it is given back: the relay no longer counts on being woken
            }
        }
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(want ? OutboxSql.waitForCommits(table) : OutboxSql.stopWaiting(table))) {
            rs.next();
            if (want && rs.getBoolean(1)) {
                synchronized (stop) {
                    heldTaking = ++takings; // after it is taken: senders notify from now on
                }
                wake.run();
            }
        }
    }

    private void connected(boolean connected) {
        synchronized (stop) {
            listening = connected;
            heldTaking = 0;
        }
    }

    private void sleep(Duration pause) {
        synchronized (stop) {
            if (!closed) {
                try {
                    stop.wait(Math.max(1, pause.toMillis()));
                } catch (InterruptedException e) {
                    closed = true;
                }
            }
        }
    }

    /** Stops listening and gives the connection back; waits for the listener's thread a little. */
    @Override
    public void close() {
        synchronized (stop) {
            closed = true;
            stop.notifyAll();
        }
        try {
            thread.join(WAIT_MILLIS * 4L);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
