package dev.idem.bench.e2e;

import dev.idem.bench.e2e.Contender.Answer;
import dev.idem.bench.e2e.Workload.Delivery;
import dev.idem.redis.RedisStore;
import io.lettuce.core.RedisClient;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.sql.SQLException;
import java.util.List;
import java.util.Objects;

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
                    RedisStore store = RedisStore.builder(Objects.requireNonNull(env.redisUri()))
                            .prefix(env.runId())
                            .build();
                    return JdbcContenders.leaseSession(env, store);
                });
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
