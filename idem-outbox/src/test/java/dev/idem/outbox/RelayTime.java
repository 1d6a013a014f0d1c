package dev.idem.outbox;

import dev.idem.testkit.MutableClock;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * The three clocks a relay test moves together: the wall clock (backoffs, sent and purge times), the relays' monotonic
 * clock (renewals, how long a relay may publish its shards) and the database's clock as the lease tables see it.
 */
final class RelayTime {
    final MutableClock clock = MutableClock.atNow();
    private final AtomicLong nanos = new AtomicLong();

    long nanoTime() {
        return nanos.get();
    }

    /**
     * Lets {@code time} pass on every clock. The database's clock cannot be moved, so every lease end of {@code table}
     * moves back by {@code time}: what the database's clock moving on does to the comparisons with it.
     */
    void passes(DataSource dataSource, String table, Duration time) throws SQLException {
        clock.advance(time);
        nanos.addAndGet(time.toNanos());
        long ms = time.toMillis();
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement()) {
            s.executeUpdate(
                    "UPDATE " + table + "_shards SET expires_at = expires_at - " + ms + " WHERE owner IS NOT NULL");
            s.executeUpdate("UPDATE " + table + "_relays SET expires_at = expires_at - " + ms);
        }
    }
}
