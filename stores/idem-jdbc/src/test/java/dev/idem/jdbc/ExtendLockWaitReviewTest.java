package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.internal.LeaseWatchdog;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Review of 4a851c5 (the PostgreSQL lease extension waits up to 125 ms in the row's lock queue, cancelled by the
 * statement watcher, tried once) on top of 3c7e7d5 (statement watcher fixes).
 */
class ExtendLockWaitReviewTest {
    private static TestDatabase postgres;

    @BeforeAll
    static void open() {
        postgres = TestDatabase.postgres("ExtendLockWaitReview");
    }

    @AfterAll
    static void close() {
        postgres.close();
    }

    private static HikariDataSource pool(TestDatabase db, int size) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(db.url());
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(2);
        config.setConnectionTimeout(10_000);
        return new HikariDataSource(config);
    }

    /**
     * Scenario: one JVM runs 21 handlings under the lease watchdog (lease 2 s, so a renewal is due every 2/3 s and the
     * sweep runs every 1/3 s; every watchdog of the JVM sweeps on the one shared thread). Twenty of them have their
     * claim's row held by another open transaction: a handler's transaction that wrote its completion with {@code
     * completeInTransaction} under a transaction manager other than OwnTransaction (renewals are not paused there),
     * still committing, or a session whose commit never came back. The 21st handling ("free") has nothing to do with
     * those rows; its row is not locked by anyone, the store is healthy.
     *
     * <p>Each held row now costs the sweep 125-175 ms (the watcher's bound plus its 50 ms tick, plus the cancel's
     * round trip), and a failed extension keeps its due time, so every sweep visits every held row again: a sweep
     * takes about 3 s, longer than the lease. The free key's extensions, made once per sweep at best, come further
     * apart than its lease, and another consumer's claim takes the free key over while its handler still runs:
     * a double effect.
     *
     * <p>Expected: a handling whose own row is free keeps its lease however many other rows are held: the watchdog
     * must not spend (held rows x bound) serially before renewing the others (bound the sweep, renew free rows first,
     * or wait for held rows concurrently / not at all). Observed at 4a851c5: the free key is taken over.
     * (The NOWAIT version before 4a851c5 spent about the same, 126 ms of pauses, per held row: not new, but the
     * commit's goal "a lease is not lost on a healthy store" does not hold.)
     */
    @Test
    @Timeout(120)
    void postgres_heldRowsOfOtherHandlings_doNotCostAFreeHandlingItsLease() throws Exception {
        int held = Integer.getInteger("review.held", 20);
        Duration lease = Duration.ofSeconds(2);
        List<IdempotencyEvent> events = new CopyOnWriteArrayList<>();
        try (HikariDataSource ds = pool(postgres, 8)) {
            JdbcStore store = JdbcStore.builder(ds).createTableIfMissing(true).build();
            LeaseWatchdog watchdog = new LeaseWatchdog(store, "review", events::add, lease);
            List<LeaseWatchdog.Watch> watches = new ArrayList<>();
            IdempotencyKey free = IdempotencyKey.of("sweep", "free");
            assertThat(store.claim(ClaimRequest.of(free, "free-owner", lease))).isInstanceOf(ClaimResult.Claimed.class);
            for (int i = 0; i < held; i++) {
                IdempotencyKey k = IdempotencyKey.of("sweep", "held-" + i);
                assertThat(store.claim(ClaimRequest.of(k, "held-owner-" + i, lease)))
                        .isInstanceOf(ClaimResult.Claimed.class);
            }
            try (Connection holder = postgres.connection()) {
                holder.setAutoCommit(false);
                try (Statement s = holder.createStatement()) {
                    // the handlers' transactions holding their completions
                    s.execute("SELECT id FROM idem_keys WHERE owner_token LIKE 'held-owner-%' FOR UPDATE");
                }
                watches.add(watchdog.watch(free, "free-owner"));
                for (int i = 0; i < held; i++) {
                    watches.add(watchdog.watch(IdempotencyKey.of("sweep", "held-" + i), "held-owner-" + i));
                }
                ClaimResult stolen = null;
                long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
                while (System.nanoTime() < end && stolen == null) {
                    Thread.sleep(100);
                    ClaimResult r = store.claim(ClaimRequest.of(free, "other-consumer", lease));
                    if (r instanceof ClaimResult.Acquired) {
                        stolen = r;
                    }
                }
                watches.forEach(LeaseWatchdog.Watch::close);
                holder.rollback();
                long unavailable = events.stream()
                        .filter(e -> e.type() == IdempotencyEvent.Type.STORE_UNAVAILABLE)
                        .count();
                assertThat(stolen)
                        .as("another consumer's claim of the free key while its handler runs under the watchdog" + " ("
                                + unavailable + " STORE_UNAVAILABLE reports for the " + held + " held rows)")
                        .isNull();
            }
        }
    }
}
