package dev.idem.nats;

import io.nats.client.Connection;
import java.time.Duration;
import java.util.concurrent.TimeoutException;

/**
 * Notices a connection that says CONNECTED but reads nothing more, and reconnects it. jnats refuses a delivered
 * message whose header value lies outside printable ASCII (any other client may send one, e.g. {@code Trace: café}) in
 * its reader thread, which then stops: every later pull comes back empty, and the client's own pings give up only
 * after minutes. After a pull that brought nothing, at most every {@link #EVERY}, the watch asks the server for a
 * PONG; none within {@link #ANSWER} on a connection that stayed CONNECTED all along is logged with the likely cause,
 * and the connection is reconnected, so that the messages behind it are handled. (The unreadable message itself comes
 * back after AckWait and stops the reader again: only its producer can fix it.) A half-open connection is handled the
 * same way, sooner than the pings would.
 */
final class ReaderWatch {
    private static final System.Logger LOG = System.getLogger(ReaderWatch.class.getName());
    private static final Duration EVERY = Duration.ofSeconds(5);
    private static final Duration ANSWER = Duration.ofSeconds(5);

    private final Connection connection;
    private final String name;
    private long lastCheck = System.nanoTime();

    ReaderWatch(Connection connection, String name) {
        this.connection = connection;
        this.name = name;
    }

    /** Called by the fetch thread after a pull that brought nothing. */
    void afterEmptyPull() throws InterruptedException {
        long now = System.nanoTime();
        if (now - lastCheck < EVERY.toNanos() || connection.getStatus() != Connection.Status.CONNECTED) {
            return;
        }
        lastCheck = now;
        long reconnects = connection.getStatistics().getReconnects();
        try {
            connection.flush(ANSWER);
        } catch (TimeoutException e) {
            if (connection.getStatus() == Connection.Status.CONNECTED
                    && connection.getStatistics().getReconnects() == reconnects) {
                reconnect();
            }
        } catch (RuntimeException e) {
            // Closing or reconnecting already: the client's own reconnect deals with it.
        }
    }

    private void reconnect() throws InterruptedException {
        LOG.log(
                System.Logger.Level.WARNING,
                "{0}: the connection to NATS says CONNECTED but answered no PING within {1} s; reconnecting it. jnats"
                        + " stops reading when a delivered message carries a header key or value outside printable"
                        + " ASCII: if this repeats every AckWait, the consumer's first unacknowledged message (its ack"
                        + " floor + 1) is the likely one: remove it from the stream, or have its producer send ASCII"
                        + " headers",
                name,
                ANSWER.toSeconds());
        try {
            connection.forceReconnect();
        } catch (java.io.IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "{0}: reconnect failed ({1})", name, e.toString());
        }
    }
}
