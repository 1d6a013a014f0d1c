package dev.idem.spring.outbox;

import dev.idem.outbox.OutboxRelay;
import dev.idem.outbox.OutboxStats;
import java.time.Duration;
import org.jspecify.annotations.Nullable;

/** The relay's stats, read from the database at most once a second however many gauges and probes ask. */
final class OutboxStatsCache {
    private static final long MAX_AGE_NANOS = Duration.ofSeconds(1).toNanos();

    private final OutboxRelay relay;
    private @Nullable OutboxStats last;
    private long readAt;

    OutboxStatsCache(OutboxRelay relay) {
        this.relay = relay;
    }

    synchronized OutboxStats get() {
        long now = System.nanoTime();
        OutboxStats stats = last;
        if (stats == null || now - readAt > MAX_AGE_NANOS) {
            stats = relay.stats();
            last = stats;
            readAt = now;
        }
        return stats;
    }
}
