package dev.idem.bench.e2e;

import dev.idem.IdempotencyKey;
import dev.idem.Outcome;
import dev.idem.StoreUnavailableException;
import dev.idem.bench.e2e.Contender.Answer;
import dev.idem.bench.e2e.Workload.Delivery;
import dev.idem.bench.e2e.Workload.Payment;
import dev.idem.jdbc.UniqueRowGuard;
import dev.idem.redis.RedisStore;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.IdempotencyStore;
import io.lettuce.core.RedisClient;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;

/** The contenders that claim in Redis and write the effect to the database. */
final class RedisContenders {
    private RedisContenders() {}

    /** How long the recipe keeps a key (its dedup window). */
    static final long RECIPE_TTL_MILLIS = 3_600_000;

    /** Idem's Redis lease store behind a Guard, per message, with the ledger row as the business guard. */
    static Contender idemRedis() {
        return new JdbcContenders.Simple(
                "idem-redis",
                "Idem Redis store (`Guard` + `RedisStore`) + business transaction, unique ledger row",
                1,
                true,
                "ledger_unique",
                env -> {
                    RedisStore store = ClaimsOnly.armed(RedisStore.builder(Objects.requireNonNull(env.redisUri()))
                            .prefix(env.runId())
                            .build());
                    return JdbcContenders.leaseSession(env, store);
                });
    }

    /**
     * Idem's Redis store batched: {@code RedisStore.claimAll} claims the distinct keys of a batch in one round trip;
     * the claimed ones run in ONE database transaction, each ledger row written first by a {@link UniqueRowGuard}
     * (ledger unique on the payment, as for the per-message contender: a redelivery that takes over the claim of a
     * consumer that died between the commit and {@code complete} finds the effect done and charges nothing); after the
     * commit each claim is completed. A handler failure rolls the transaction back, the rest runs again without it,
     * and its claim is released (redelivered). Keys another consumer holds are claimed again after the batch, polling
     * from 1 ms (doubling, at most 200 ms) for up to 1 s like the Guard's in-progress wait, then answered "retry".
     */
    static Contender idemRedisBatch(int size) {
        return new JdbcContenders.Simple(
                "idem-redis-batch",
                "Idem Redis store batched (`claimAll`, " + size
                        + " keys per call) + one business transaction per batch," + " unique ledger row",
                size,
                true,
                "ledger_unique",
                env -> {
                    RedisStore store = ClaimsOnly.armed(RedisStore.builder(Objects.requireNonNull(env.redisUri()))
                            .prefix(env.runId())
                            .build());
                    return new RedisBatch(env, env.bank().faults().crashable(store));
                });
    }

    private static final class RedisBatch implements Contender.Session {
        private static final Duration WAIT_FOR_IN_PROGRESS = Duration.ofSeconds(1);
        private static final Duration RETENTION = Duration.ofDays(1);

        private final Bank bank;
        private final IdempotencyStore store;
        private final Duration lease;
        private final UniqueRowGuard ledger = UniqueRowGuard.builder()
                .table("ledger_unique")
                .uniqueKey("payment_id")
                .build();

        RedisBatch(Contender.Env env, IdempotencyStore store) {
            this.bank = env.bank();
            this.store = store;
            this.lease = env.lease();
        }

        @Override
        public List<Answer> deliver(List<Delivery> batch) throws Exception {
            Map<String, Integer> firsts = new LinkedHashMap<>();
            for (int i = 0; i < batch.size(); i++) {
                firsts.putIfAbsent(batch.get(i).key(), i);
            }
            Map<Integer, Answer> answered = new HashMap<>();
            List<Integer> pending = new ArrayList<>(firsts.values());
            String owner = "bench-" + UUID.randomUUID();
            long waitUntil = System.nanoTime() + WAIT_FOR_IN_PROGRESS.toNanos();
            long poll = 1;
            while (true) {
                List<ClaimRequest> requests = new ArrayList<>(pending.size());
                for (int i : pending) {
                    requests.add(ClaimRequest.of(
                            IdempotencyKey.of(
                                    JdbcContenders.NAMESPACE, batch.get(i).key()),
                            owner,
                            lease));
                }
                List<ClaimResult> claims;
                try {
                    claims = store.claimAll(requests);
                } catch (StoreUnavailableException e) {
                    pending.forEach(i -> answered.put(i, new Answer(Answer.Kind.RETRY, 100)));
                    break;
                }
                List<Integer> claimed = new ArrayList<>();
                List<Integer> busy = new ArrayList<>();
                Instant busyUntil = Instant.EPOCH;
                for (int j = 0; j < pending.size(); j++) {
                    int i = pending.get(j);
                    ClaimResult claim = claims.get(j);
                    if (claim instanceof ClaimResult.Acquired) {
                        claimed.add(i);
                    } else if (claim instanceof ClaimResult.Done) {
                        answered.put(i, Answer.ACK);
                    } else {
                        busy.add(i);
                        Instant until = ((ClaimResult.InProgress) claim).leaseUntil();
                        busyUntil = until.isAfter(busyUntil) ? until : busyUntil;
                    }
                }
                runClaimed(batch, claimed, requests, pending, owner, answered);
                pending = busy;
                if (pending.isEmpty()) {
                    break;
                }
                if (System.nanoTime() + poll * 1_000_000 > waitUntil) {
                    long retry = Math.max(10, Math.min(2_000, busyUntil.toEpochMilli() - System.currentTimeMillis()));
                    pending.forEach(i -> answered.put(i, new Answer(Answer.Kind.RETRY, retry)));
                    break;
                }
                Thread.sleep(poll);
                poll = Math.min(200, poll * 2);
            }
            List<Answer> answers = new ArrayList<>(batch.size());
            for (Delivery d : batch) {
                answers.add(answered.get(firsts.get(d.key())));
            }
            return answers;
        }

        /**
         * Runs the claimed deliveries in one transaction, then completes each claim (or releases the claims of the
         * deliveries whose handler failed).
         */
        private void runClaimed(
                List<Delivery> batch,
                List<Integer> claimed,
                List<ClaimRequest> requests,
                List<Integer> pending,
                String owner,
                Map<Integer, Answer> answered)
                throws SQLException {
            if (claimed.isEmpty()) {
                return;
            }
            Map<Integer, IdempotencyKey> keys = new HashMap<>();
            for (int j = 0; j < pending.size(); j++) {
                keys.put(pending.get(j), requests.get(j).key());
            }
            Set<Integer> failed = new HashSet<>();
            List<Integer> applied = null;
            for (int attempt = 0; attempt < 20 && applied == null; attempt++) {
                int[] current = {-1};
                try {
                    applied = bank.inTransaction(c -> {
                        List<Integer> done = new ArrayList<>();
                        for (int i : claimed) {
                            if (failed.contains(i)) {
                                continue;
                            }
                            current[0] = i;
                            Delivery d = batch.get(i);
                            Payment p = d.payment();
                            Outcome o;
                            try {
                                o = ledger.insertOnce(
                                        c,
                                        Map.of("payment_id", p.id(), "account_id", p.account(), "amount", p.amount()),
                                        tx -> {
                                            bank.debitAccount(tx, d);
                                            return Outcome.processed();
                                        });
                            } catch (SQLException | RuntimeException e) {
                                throw e;
                            } catch (Exception e) {
                                throw new IllegalStateException("the ledger insert failed", e);
                            }
                            if (o.type() == Outcome.Type.PROCESSED) {
                                done.add(i);
                            }
                        }
                        return done;
                    });
                } catch (Faults.HandlerFailure e) {
                    failed.add(current[0]);
                } catch (SQLException e) {
                    if (!Bank.isDeadlock(e)) {
                        throw e;
                    }
                }
            }
            if (applied == null) { // deadlocked every time: give every claim back
                failed.addAll(claimed);
            }
            Set<Integer> charged = applied == null ? Set.of() : new HashSet<>(applied);
            for (int i : claimed) {
                if (failed.contains(i)) {
                    store.release(keys.get(i), owner);
                    answered.put(i, Answer.RETRY);
                    continue;
                }
                if (charged.contains(i)) {
                    bank.crashAfterCommitIfAsked(batch.get(i));
                }
                store.complete(keys.get(i), owner, null, RETENTION);
                answered.put(i, Answer.ACK);
            }
        }
    }

    /**
     * The Redis recipe as users write it: {@code SET key 1 NX PX <window>}; on success run the business transaction;
     * on failure {@code DEL key} so that the redelivery runs.
     */
    static Contender setNxRecipe() {
        return new JdbcContenders.Simple(
                "redis-setnx", "Redis `SET NX` recipe (SET NX PX, run, DEL on failure)", 1, true, "ledger", env -> {
                    Bank bank = env.bank();
                    RedisClient client = RedisClient.create(Objects.requireNonNull(env.redisUri()));
                    StatefulRedisConnection<String, String> connection = client.connect();
                    RedisCommands<String, String> redis = connection.sync();
                    String prefix = env.runId() + ":";
                    SetArgs nx = SetArgs.Builder.nx().px(RECIPE_TTL_MILLIS);
                    return new Contender.Session() {
                        @Override
                        public List<Answer> deliver(List<Delivery> batch) throws Exception {
                            Delivery d = batch.get(0);
                            String key = prefix + d.key();
                            if (redis.set(key, "1", nx) == null) {
                                return List.of(Answer.ACK); // a duplicate: skip it
                            }
                            try {
                                bank.inTransaction(c -> {
                                    bank.debit(c, d);
                                    return null;
                                });
                            } catch (Faults.HandlerFailure | SQLException e) {
                                redis.del(key);
                                return List.of(Answer.RETRY);
                            }
                            bank.crashAfterCommitIfAsked(d);
                            return List.of(Answer.ACK);
                        }

                        @Override
                        public void close() {
                            connection.close();
                            client.shutdown();
                        }
                    };
                });
    }
}
