package dev.idem.outbox;

import dev.idem.jdbc.Dialect;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/** What an operator reads and does: the backlog's size and age, the parked messages, unparking one. */
final class Backlog {
    private final RelayDatabase db;
    private final OutboxSql sql;
    private final Clock clock;

    Backlog(RelayDatabase db, OutboxSql sql, Clock clock) {
        this.db = db;
        this.sql = sql;
        this.clock = clock;
    }

    OutboxStats stats() {
        return db.run("reading the outbox stats", c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.stats());
                    ResultSet rs = ps.executeQuery()) {
                rs.next();
                long oldest = rs.getLong(2);
                Duration age = rs.wasNull() ? Duration.ZERO : Duration.ofMillis(Math.max(0, clock.millis() - oldest));
                return new OutboxStats(rs.getLong(1), rs.getLong(3), age);
            }
        });
    }

    List<ParkedMessage> parked(int limit) {
        return db.run("reading the parked messages", c -> {
            List<ParkedMessage> parked = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(sql.parked())) {
                ps.setInt(1, limit);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        parked.add(new ParkedMessage(
                                rs.getString(1),
                                rs.getString(2),
                                rs.getString(3),
                                Instant.ofEpochMilli(rs.getLong(4)),
                                rs.getInt(5),
                                Objects.requireNonNullElse(rs.getString(6), "")));
                    }
                }
            }
            return parked;
        });
    }

    /** On PostgreSQL it also wakes the idle relays, whichever process unparks: one of them owns the message's shard. */
    boolean unpark(String messageId) {
        return db.run("unparking " + messageId, c -> {
            boolean unparked = RelayDatabase.update(c, sql.unpark(), List.of(messageId)) == 1;
            if (unparked && sql.dialect == Dialect.POSTGRESQL) {
                try (PreparedStatement ps = c.prepareStatement(OutboxSql.notifyRelays())) {
                    ps.setString(1, OutboxSql.channel(sql.table));
                    ps.execute();
                }
            }
            return unparked;
        });
    }
}
