package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.IdempotencyKey;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.testsupport.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Consumers starting with {@code createTableIfMissing(true)} next to others that run. */
class ConcurrentSchemaTest {
    private static final int STARTING = 6;

    static Stream<Function<String, TestDatabase>> databases() {
        return Stream.of(TestDatabase::postgres, TestDatabase::h2, TestDatabase::mariadb);
    }

    /**
     * Several consumers starting at the same moment on a fresh database: {@code CREATE … IF NOT EXISTS} does not
     * serialize them, and the losers failed (PostgreSQL: a unique violation in the catalog; H2: "object already
     * exists", which the retry did not recognise, found when its database-clock contract ran three cases at a time),
     * reported as the store unavailable. Every one must start.
     */
    @ParameterizedTest
    @MethodSource("databases")
    void storesStartingAtOnce_onAFreshTable_allStart(Function<String, TestDatabase> engine) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(STARTING);
        try (TestDatabase db = engine.apply("ConcurrentSchemaTest")) {
            for (int round = 0; round < 10; round++) {
                String table = "fresh_" + round;
                CyclicBarrier together = new CyclicBarrier(STARTING);
                List<Future<JdbcStore>> starts = new ArrayList<>();
                for (int i = 0; i < STARTING; i++) {
                    starts.add(pool.submit(() -> {
                        together.await(10, TimeUnit.SECONDS);
                        return JdbcStore.builder(db.dataSource())
                                .table(table)
                                .createTableIfMissing(true)
                                .build();
                    }));
                }
                for (Future<JdbcStore> start : starts) {
                    try (JdbcStore store = start.get(30, TimeUnit.SECONDS)) {
                        assertThat(store.claim(ClaimRequest.of(
                                        IdempotencyKey.of("orders", "o-" + starts.indexOf(start)),
                                        "owner",
                                        Duration.ofMinutes(1))))
                                .as("table %s", table)
                                .isInstanceOf(ClaimResult.Claimed.class);
                    }
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * A consumer starting while another holds a transaction that wrote the table (a batch claim, an inbox's business
     * transaction): {@code CREATE INDEX IF NOT EXISTS} (PostgreSQL) and {@code CREATE SEQUENCE IF NOT EXISTS} (MariaDB)
     * waited for that transaction's lock even though the index and the sequence existed, and every claim after them
     * queued behind the waiting DDL, so one open transaction stalled every consumer of the table (a CI run saw two
     * claims wait 30 s). A store whose objects exist starts without waiting, and claims go on meanwhile.
     */
    @ParameterizedTest
    @MethodSource("databases")
    @Timeout(60)
    void aStoreStarting_whileATransactionHoldsTheTable_doesNotWaitForIt(Function<String, TestDatabase> engine)
            throws Exception {
        ExecutorService starter = Executors.newSingleThreadExecutor();
        try (TestDatabase db = engine.apply("ConcurrentSchemaTest");
                JdbcStore running = JdbcStore.builder(db.dataSource())
                        .createTableIfMissing(true)
                        .build()) {
            Dialect dialect = Schema.detect(db.dataSource(), "test");
            try (OwnedTransaction open = OwnedTransaction.begin(db.dataSource(), dialect, true)) {
                new Sql(dialect, Schema.DEFAULT_TABLE)
                        .insertClaims(
                                open.connection(),
                                List.of(new Sql.NewClaim(
                                        "held", "owner-a", System.currentTimeMillis() + 60_000, null)));

                Future<JdbcStore> starting = starter.submit(() -> JdbcStore.builder(db.dataSource())
                        .createTableIfMissing(true)
                        .build());

                try (JdbcStore started = starting.get(20, TimeUnit.SECONDS)) {
                    assertThat(started.claim(ClaimRequest.of(
                                    IdempotencyKey.of("orders", "o-1"), "owner-b", Duration.ofMinutes(1))))
                            .isInstanceOf(ClaimResult.Claimed.class);
                }
                assertThat(running.claim(
                                ClaimRequest.of(IdempotencyKey.of("orders", "o-2"), "owner-c", Duration.ofMinutes(1))))
                        .isInstanceOf(ClaimResult.Claimed.class);
            }
        } finally {
            starter.shutdownNow();
        }
    }
}
