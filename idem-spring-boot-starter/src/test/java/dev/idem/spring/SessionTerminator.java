package dev.idem.spring;

import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A database that ends every session of one application again and again (a restart loop, a failover, a pooler in front
 * of a database that is down) while it still accepts new connections: a side thread terminates, on the local
 * PostgreSQL, every backend whose {@code application_name} is the application's, every 20 ms, until closed. The
 * application connects with {@link #url} so that no other session of the shared server is touched.
 */
final class SessionTerminator implements AutoCloseable {
    private final TestDatabase db;
    private final String applicationName;
    private final AtomicInteger terminated = new AtomicInteger();
    private volatile boolean running = true;
    private final Thread loop;

    private SessionTerminator(TestDatabase db, String applicationName) {
        this.db = db;
        this.applicationName = applicationName;
        this.loop = new Thread(this::terminateUntilClosed, "session-terminator-" + applicationName);
        this.loop.setDaemon(true);
    }

    /** The URL of {@code db} for an application named {@code applicationName}. */
    static String url(TestDatabase db, String applicationName) {
        return db.url() + "&ApplicationName=" + applicationName;
    }

    static SessionTerminator start(TestDatabase db, String applicationName) {
        SessionTerminator terminator = new SessionTerminator(db, applicationName);
        terminator.loop.start();
        return terminator;
    }

    /** How many sessions of the application were ended so far. */
    int terminated() {
        return terminated.get();
    }

    private void terminateUntilClosed() {
        String sql = "SELECT COUNT(*) FILTER (WHERE pg_terminate_backend(pid)), pg_sleep(0.02) FROM pg_stat_activity"
                + " WHERE application_name = ? AND pid <> pg_backend_pid()";
        while (running) {
            try (Connection c = db.connection();
                    PreparedStatement s = c.prepareStatement(sql)) {
                while (running) {
                    s.setString(1, applicationName);
                    try (ResultSet r = s.executeQuery()) {
                        r.next();
                        terminated.addAndGet(r.getInt(1));
                    }
                }
            } catch (SQLException e) {
                if (running) {
                    throw new IllegalStateException("the session terminator failed: " + e.getMessage(), e);
                }
            }
        }
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        loop.join(10_000);
    }
}
