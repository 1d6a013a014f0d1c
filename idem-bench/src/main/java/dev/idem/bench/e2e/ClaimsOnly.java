package dev.idem.bench.e2e;

import dev.idem.IdempotencyKey;
import dev.idem.bench.e2e.Workload.Delivery;
import dev.idem.redis.RedisStore;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.LettuceFutures;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Claims alone, no business transaction: the raw rate of pipelined {@code SET NX PX} (one pipeline of {@code batch}
 * commands per round trip, one connection per thread) against Idem's {@code RedisStore.claimAll} ({@code batch} keys
 * per call, one Lua script). Every key of the workload's stream is claimed once per delivery, in passes over the stream
 * (each pass's keys new) until {@link #MIN_NANOS} have passed: one pass of a usual stream lasts a fraction of a second,
 * shorter than the pauses of a small machine. The check: the keys won equal the distinct payments of every pass.
 */
final class ClaimsOnly {
    private static final long MIN_NANOS = TimeUnit.SECONDS.toNanos(2);

    private ClaimsOnly() {}

    record Result(long nanos, int claims, int won, int expected) {
        double perSecond() {
            return claims / (nanos / 1e9);
        }

        boolean correct() {
            return won == expected;
        }
    }

    static List<String> keys(Workload workload) {
        List<String> keys = new ArrayList<>(workload.messageCount());
        for (Delivery d : workload.deliveries()) {
            keys.add(d.key());
            if (d.racer() != null) {
                keys.add(d.racer().key());
            }
        }
        return keys;
    }

    @FunctionalInterface
    private interface Chunk {
        /** Claims {@code keys} (one chunk), each prefixed with {@code pass}, and returns how many it won. */
        int claim(String pass, List<String> keys) throws Exception;
    }

    static Result rawSetNx(String uri, String prefix, Workload workload, int threads, int batch)
            throws InterruptedException {
        RedisClient client = RedisClient.create(uri);
        List<StatefulRedisConnection<String, String>> connections = new ArrayList<>();
        try {
            for (int t = 0; t < threads; t++) {
                StatefulRedisConnection<String, String> c = client.connect();
                c.setAutoFlushCommands(false);
                connections.add(c);
            }
            SetArgs nx = SetArgs.Builder.nx().px(RedisContenders.RECIPE_TTL_MILLIS);
            return run(workload, threads, batch, t -> {
                RedisAsyncCommands<String, String> redis = connections.get(t).async();
                return (pass, keys) -> {
                    List<RedisFuture<String>> replies = new ArrayList<>(keys.size());
                    for (String key : keys) {
                        replies.add(redis.set(prefix + ":" + pass + key, "1", nx));
                    }
                    connections.get(t).flushCommands();
                    LettuceFutures.awaitAll(10, TimeUnit.SECONDS, replies.toArray(new RedisFuture<?>[0]));
                    int won = 0;
                    for (RedisFuture<String> reply : replies) {
                        if ("OK".equals(reply.get())) {
                            won++;
                        }
                    }
                    return won;
                };
            });
        } finally {
            connections.forEach(StatefulRedisConnection::close);
            client.shutdown();
        }
    }

    /**
     * Arms the store's namespace outside the clock: each run uses a fresh key prefix, and a store that finds a namespace
     * empty waits its arming delay (3 s by default) on the first claim, once per namespace, not per claim.
     */
    static RedisStore armed(RedisStore store) {
        store.claim(ClaimRequest.of(
                IdempotencyKey.of(JdbcContenders.NAMESPACE, "bench-warm-up"), "bench-warm-up", Duration.ofSeconds(1)));
        return store;
    }

    static Result idemClaimAll(String uri, String prefix, Workload workload, int threads, int batch)
            throws InterruptedException {
        try (RedisStore store = armed(RedisStore.builder(uri).prefix(prefix).build())) {
            return run(workload, threads, batch, t -> (pass, keys) -> {
                Set<String> distinct = new LinkedHashSet<>(keys); // a batch claims each key once
                List<ClaimRequest> requests = new ArrayList<>(distinct.size());
                String owner = "bench-" + t + "-" + System.nanoTime();
                for (String key : distinct) {
                    requests.add(ClaimRequest.of(
                            IdempotencyKey.of(JdbcContenders.NAMESPACE, pass + key), owner, Duration.ofMinutes(5)));
                }
                int won = 0;
                for (ClaimResult result : store.claimAll(requests)) {
                    if (result instanceof ClaimResult.Claimed) {
                        won++;
                    }
                }
                return won;
            });
        }
    }

    private interface PerThread {
        Chunk forThread(int thread);
    }

    private static Result run(Workload workload, int threads, int batch, PerThread perThread)
            throws InterruptedException {
        List<String> keys = keys(workload);
        List<Chunk> chunks = new ArrayList<>(threads);
        for (int t = 0; t < threads; t++) {
            chunks.add(perThread.forThread(t));
        }
        int passes = 0;
        int won = 0;
        long start = System.nanoTime();
        do {
            won += pass(passes + "/", keys, chunks, batch);
            passes++;
        } while (System.nanoTime() - start < MIN_NANOS);
        long nanos = System.nanoTime() - start;
        return new Result(nanos, keys.size() * passes, won, workload.payments().size() * passes);
    }

    /** Every key of the stream claimed once, prefixed with {@code pass}, on one thread per chunk; the keys won. */
    private static int pass(String pass, List<String> keys, List<Chunk> chunks, int batch) throws InterruptedException {
        AtomicInteger next = new AtomicInteger();
        AtomicInteger won = new AtomicInteger();
        List<Thread> workers = new ArrayList<>();
        List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
        for (Chunk chunk : chunks) {
            Thread worker = new Thread(() -> {
                try {
                    for (int from = next.getAndAdd(batch); from < keys.size(); from = next.getAndAdd(batch)) {
                        won.addAndGet(chunk.claim(pass, keys.subList(from, Math.min(keys.size(), from + batch))));
                    }
                } catch (Exception e) {
                    failures.add(e);
                }
            });
            worker.setDaemon(true);
            workers.add(worker);
            worker.start();
        }
        for (Thread worker : workers) {
            worker.join();
        }
        if (!failures.isEmpty()) {
            throw new IllegalStateException("claims failed: " + failures.get(0), failures.get(0));
        }
        return won.get();
    }

    /** Deletes the keys a run left under {@code prefix} (its keys start with it, or with {@code "{" + prefix}). */
    static void deleteKeys(String uri, String prefix) {
        RedisClient client = RedisClient.create(uri);
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            RedisCommands<String, String> redis = c.sync();
            for (String pattern : List.of(prefix + ":*", "{" + prefix + ":*")) {
                ScanCursor cursor = ScanCursor.INITIAL;
                do {
                    KeyScanCursor<String> page =
                            redis.scan(cursor, ScanArgs.Builder.matches(pattern).limit(1000));
                    if (!page.getKeys().isEmpty()) {
                        redis.unlink(page.getKeys().toArray(new String[0]));
                    }
                    cursor = page;
                } while (!cursor.isFinished());
            }
        } finally {
            client.shutdown();
        }
    }
}
