package dev.idem.outbox;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

/** Deletes sent messages older than the retention, in batches; never an unsent one. */
final class Purge {
    private final RelayDatabase db;
    private final OutboxSql sql;
    private final Duration retention;
    private final Duration interval;
    private final int batchSize;
    private final Clock clock;
    private Instant next = Instant.EPOCH;

    Purge(RelayDatabase db, OutboxSql sql, Duration retention, Duration interval, int batchSize, Clock clock) {
        this.db = db;
        this.sql = sql;
        this.retention = retention;
        this.interval = interval;
        this.batchSize = batchSize;
        this.clock = clock;
    }

    /** Purges now; returns how many were deleted. */
    int once() {
        long before = clock.instant().minus(retention).toEpochMilli();
        int total = 0;
        while (true) {
            int deleted = db.update("purging sent messages", sql.purge(), List.of(before, batchSize));
            total += deleted;
            if (deleted < batchSize) {
                return total;
            }
        }
    }

    /** Purges when the interval has passed since the last time (the relay's thread only). */
    void whenDue() {
        Instant now = clock.instant();
        if (!now.isBefore(next)) {
            next = now.plus(interval);
            once();
        }
    }
}
