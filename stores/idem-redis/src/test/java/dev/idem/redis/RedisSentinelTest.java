package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.UpdateResult;
import dev.idem.testkit.TcpProxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A Sentinel-managed master and replica of the test's own, one Sentinel (quorum 1): the master dies with claims the
 * replica never received (its replication runs through a proxy that cuts the link), the Sentinel promotes the
 * replica, and the stores, connected through the Sentinel, follow it.
 */
class RedisSentinelTest {
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final String MASTER = "idem-master";

    private final RecordingListener listener = new RecordingListener();
    private final List<RedisStore> stores = new ArrayList<>();

    @AfterEach
    void closeStores() {
        stores.forEach(RedisStore::close);
    }

    @Test
    @Timeout(120)
    void failoverLosingTheLastClaims_failsClosedOnEveryStore_andAfterRearmTokensExceedEveryEarlierOne() {
        try (RedisProcess master = RedisProcess.server("master");
                TcpProxy link = TcpProxy.start("127.0.0.1", master.port());
                RedisProcess replica =
                        RedisProcess.server("replica", "--replicaof", "127.0.0.1", Integer.toString(link.port()));
                RedisProcess sentinel = RedisProcess.sentinel(MASTER, master.port(), Duration.ofMillis(1000))) {
            Awaitility.await("the Sentinel knows the replica")
                    .atMost(Duration.ofSeconds(30))
                    .until(() -> sentinel.info("sentinel", "master0").contains("slaves=1"));
            String url = "redis-sentinel://127.0.0.1:" + sentinel.port() + "/0#" + MASTER;
            RedisStore first = store(url);
            first.claim(claimOf("replicated", "owner-a"));
            assertThat(first.complete(key("replicated"), "owner-a", null, Duration.ofHours(1)))
                    .isEqualTo(UpdateResult.APPLIED);
            RedisFailoverTest.awaitReplicated(master, replica);
            link.blackholeAll(true);
            link.partitionExisting();
            long highest = 0;
            for (int i = 0; i < 3; i++) {
                var claimed = (ClaimResult.Acquired) first.claim(claimOf("lost-" + i, "owner-a"));
                highest = Math.max(highest, claimed.fencingToken());
            }

            master.kill();
            Awaitility.await("the Sentinel promotes the replica")
                    .atMost(Duration.ofSeconds(60))
                    .ignoreExceptions()
                    .until(() -> replica.info("replication", "role").equals("master"));

            Awaitility.await("the store that handed out the lost tokens sees the loss on the promoted replica")
                    .atMost(Duration.ofSeconds(30))
                    .ignoreExceptionsMatching(e ->
                            e instanceof StoreUnavailableException && !(e instanceof RedisStore.MarksLostException))
                    .untilAsserted(() -> assertThatThrownBy(() -> first.claim(claimOf("new-key", "owner-a")))
                            .isInstanceOf(RedisStore.MarksLostException.class));
            assertThat(first.lookup(key("lost-0")))
                    .as("the promoted replica lacks the last claims")
                    .isEmpty();
            RedisStore second = store(url);
            assertThatThrownBy(() -> second.claim(claimOf("lost-0", "owner-b")))
                    .as("a store started after the failover")
                    .isInstanceOf(RedisStore.MarksLostException.class);
            assertThat(listener.warnings).isNotEmpty().allMatch(w -> w.type() == IdempotencyEvent.Type.MARKS_LOST);

            assertThat(second.rearm()).containsExactly("orders");
            long before = highest;
            assertThat(List.of(first.claim(claimOf("lost-0", "owner-c")), second.claim(claimOf("lost-1", "owner-c"))))
                    .as("the keys whose claims were lost, claimed again")
                    .allSatisfy(c -> assertThat(((ClaimResult.Acquired) c).fencingToken())
                            .isGreaterThan(before));
        }
    }

    private RedisStore store(String url) {
        RedisStore store = RedisStore.builder(url)
                .prefix("sentinel")
                .commandTimeout(Duration.ofSeconds(1))
                .armingDelay(Duration.ofMillis(600))
                .listener(listener)
                .build();
        stores.add(store);
        return store;
    }

    private static IdempotencyKey key(String k) {
        return IdempotencyKey.of("orders", k);
    }

    private static ClaimRequest claimOf(String k, String owner) {
        return ClaimRequest.of(key(k), owner, LEASE);
    }
}
