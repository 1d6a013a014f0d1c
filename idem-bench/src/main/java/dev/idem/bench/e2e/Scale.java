package dev.idem.bench.e2e;

import dev.idem.IdempotencyKey;
import dev.idem.jdbc.JdbcStore;
import dev.idem.redis.RedisStore;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.Completion;
import dev.idem.testsupport.PrivateServer;
import dev.idem.testsupport.TestDatabase.Engine;
import io.lettuce.core.RedisClient;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * What retained marks cost as they grow: bytes per mark in the tables and in Redis, and whether a purge keeps up with
 * the inbox's inserts without holding its claims up.
 */
final class Scale {
    private Scale() {}

    /** Table and index bytes per row of the dedup tables that hold retained rows. */
    static String tableBytes(Bank bank) throws SQLException {
        List<String> parts = new ArrayList<>();
        for (String table : List.of("idem_keys", "processed")) {
            if (!bank.tableExists(table)) {
                continue;
            }
            long rows = count(bank, "SELECT COUNT(*) FROM " + table);
            if (rows == 0) {
                continue;
            }
            long data;
            long index;
            if (bank.engine() == Engine.POSTGRESQL) {
                data = count(bank, "SELECT pg_table_size('" + table + "')");
                index = count(bank, "SELECT pg_indexes_size('" + table + "')");
            } else if (bank.engine() == Engine.MARIADB) {
                bank.execute("ANALYZE TABLE " + table);
                data = count(
                        bank,
                        "SELECT data_length FROM information_schema.tables WHERE table_schema = DATABASE()"
                                + " AND table_name = '" + table + "'");
                index = count(
                        bank,
                        "SELECT index_length FROM information_schema.tables WHERE table_schema ="
                                + " DATABASE() AND table_name = '" + table + "'");
            } else {
                continue;
            }
            parts.add(String.format(
                    Locale.ROOT,
                    "%s on %s: %,d rows, %.0f table + %.0f index bytes per row",
                    table,
                    bank.engine(),
                    rows,
                    (double) data / rows,
                    (double) index / rows));
        }
        String fact = String.join("; ", parts);
        System.err.println(fact);
        return fact;
    }

    /**
     * Puts {@code retained} / 10 (at most 1,000,000) expired marks next to the retained ones, then runs the inbox on a
     * clean workload with {@code threads} threads while one thread purges: the purge's rate against the inbox's
     * inserts (new marks per second), and the inbox's rate during the purge.
     */
    static String purgeUnderLoad(Bank bank, int retained, int threads, Workload workload, EndToEnd.Options o)
            throws Exception {
        if (!bank.tableExists("idem_keys")) {
            return "purge on " + bank.engine() + ": not measured, no Idem contender ran there";
        }
        int expired = Math.max(1000, Math.min(1_000_000, retained / 10));
        bank.reset(workload, retained, "idem_keys");
        bank.fill("idem_keys", expired, true);
        JdbcStore purger = JdbcStore.builder(bank.dataSource()).build();
        AtomicLong purged = new AtomicLong();
        AtomicLong purgeNanos = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread purge = new Thread(
                () -> {
                    long start = System.nanoTime();
                    try {
                        while (!stop.get() && purged.get() < expired) {
                            int n = purger.purgeExpired();
                            purged.addAndGet(n);
                            if (n == 0) {
                                break;
                            }
                        }
                    } catch (RuntimeException e) {
                        failure.set(e);
                    }
                    purgeNanos.set(System.nanoTime() - start);
                },
                "purge");
        Runner.Result run;
        try (Contender.Session session =
                JdbcContenders.inbox().open(new Contender.Env(bank, null, "scale", o.lease()))) {
            purge.start();
            run = Runner.run(session, workload, threads, 1, bank.faults(), o.timeout());
            stop.set(true);
            purge.join();
        }
        if (failure.get() != null) {
            throw new IllegalStateException("purge failed", failure.get());
        }
        double purgeRate = purged.get() / (purgeNanos.get() / 1e9);
        double insertRate = workload.payments().size() / (run.nanos() / 1e9);
        String fact = String.format(
                Locale.ROOT,
                "purge on %s next to %,d retained marks, while `JdbcInbox.handle` ran with %d threads: %,d expired marks"
                        + " in %.2f s (%,.0f rows/s), %.1f× the inbox's %,.0f new marks/s; the inbox meanwhile %,.0f"
                        + " messages/s%s",
                bank.engine(),
                retained,
                threads,
                purged.get(),
                purgeNanos.get() / 1e9,
                purgeRate,
                purgeRate / insertRate,
                insertRate,
                run.perSecond(),
                purged.get() < expired ? " (the run ended before the purge did)" : "");
        System.err.println(fact);
        return fact;
    }

    /**
     * Redis memory per retained mark: {@code marks} completed by {@code RedisStore} against as many {@code SET NX
     * PX} keys, each on a private Redis of its own (never the shared one), {@code used_memory} before and after.
     */
    static String redisBytesPerMark(int batch) {
        int marks = 200_000;
        long idem = bytesPerKey(marks, uri -> {
            try (RedisStore store =
                    RedisStore.builder(uri).armingDelay(Duration.ZERO).build()) {
                for (int from = 0; from < marks; from += batch) {
                    List<ClaimRequest> claims = new ArrayList<>();
                    List<Completion> completions = new ArrayList<>();
                    for (int i = from; i < Math.min(marks, from + batch); i++) {
                        IdempotencyKey key = IdempotencyKey.of("payments", "pay-" + i);
                        claims.add(ClaimRequest.of(key, "owner-" + i, Duration.ofSeconds(30)));
                        completions.add(Completion.of(key, "owner-" + i, null, Duration.ofDays(7)));
                    }
                    store.claimAll(claims);
                    store.completeAll(completions);
                }
            }
        });
        long setNx = bytesPerKey(marks, uri -> {
            RedisClient client = RedisClient.create(uri);
            try (StatefulRedisConnection<String, String> c = client.connect()) {
                RedisCommands<String, String> redis = c.sync();
                SetArgs args = SetArgs.Builder.nx().px(Duration.ofDays(7).toMillis());
                for (int i = 0; i < marks; i++) {
                    redis.set("payments:pay-" + i, "1", args);
                }
            } finally {
                client.shutdown();
            }
        });
        String fact = String.format(
                Locale.ROOT,
                "Redis memory per retained mark (%,d marks, private Redis): Idem `RedisStore` %d bytes, `SET NX PX` %d"
                        + " bytes (%.1f×)",
                marks,
                idem,
                setNx,
                (double) idem / setNx);
        System.err.println(fact);
        return fact;
    }

    @FunctionalInterface
    private interface Filler {
        void fill(String uri) throws Exception;
    }

    private static long bytesPerKey(int keys, Filler filler) {
        try (PrivateServer redis = PrivateServer.redis()) {
            long before = usedMemory(redis.url());
            filler.fill(redis.url());
            return (usedMemory(redis.url()) - before) / keys;
        } catch (Exception e) {
            throw new IllegalStateException("private Redis for the memory measurement", e);
        }
    }

    private static long usedMemory(String uri) {
        RedisClient client = RedisClient.create(uri);
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            for (String line : c.sync().info("memory").split("\r?\n")) {
                if (line.startsWith("used_memory:")) {
                    return Long.parseLong(
                            line.substring("used_memory:".length()).strip());
                }
            }
            throw new IllegalStateException("INFO memory without used_memory");
        } finally {
            client.shutdown();
        }
    }

    private static long count(Bank bank, String sql) throws SQLException {
        try (Connection c = bank.dataSource().getConnection();
                PreparedStatement ps = c.prepareStatement(sql);
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
