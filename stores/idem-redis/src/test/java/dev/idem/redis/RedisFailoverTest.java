package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.IdempotencyKey;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.UpdateResult;
import dev.idem.testkit.TcpProxy;
import java.time.Duration;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An asynchronous replica promoted after its master died with claims the replica never received: a master and a
 * replica of the test's own, the replica replicating through a proxy that cuts the link while the last claims are
 * made (replication lag, as the replica sees it), the master killed, the replica promoted with {@code REPLICAOF NO
 * ONE}.
 */
class RedisFailoverTest {
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final String NAMESPACE = "orders";

    @Test
    @Timeout(120)
    void promotedReplica_missingTheLastClaims_handsOutTokensAboveEveryEarlierOne_evenAfterRearm() {
        try (RedisProcess master = RedisProcess.server("master");
                TcpProxy link = TcpProxy.start("127.0.0.1", master.port());
                RedisProcess replica =
                        RedisProcess.server("replica", "--replicaof", "127.0.0.1", Integer.toString(link.port()))) {
            long highest;
            try (RedisStore onMaster = store(master.url())) {
                onMaster.claim(claimOf("replicated", "owner-a"));
                assertThat(onMaster.complete(key("replicated"), "owner-a", null, Duration.ofHours(1)))
                        .isEqualTo(UpdateResult.APPLIED);
                awaitReplicated(master, replica);
                link.blackholeAll(true);
                link.partitionExisting();
                highest = 0;
                for (int i = 0; i < 3; i++) {
                    var claimed = (ClaimResult.Acquired) onMaster.claim(claimOf("lost-" + i, "owner-a"));
                    highest = Math.max(highest, claimed.fencingToken());
                }
            }
            master.kill();
            replica.sync(c -> c.replicaofNoOne());

            try (RedisStore onPromoted = store(replica.url())) {
                assertThat(onPromoted.lookup(key("lost-0")))
                        .as("the promoted replica lacks the last claims")
                        .isEmpty();
                assertThat(onPromoted.lookup(key("replicated"))).isPresent();
                long before = highest;
                assertThat(onPromoted.claim(claimOf("after-failover", "owner-b")))
                        .isInstanceOfSatisfying(
                                ClaimResult.Acquired.class,
                                c -> assertThat(c.fencingToken()).isGreaterThan(before));

                onPromoted.rearm();
                assertThat(onPromoted.claim(claimOf("lost-0", "owner-c")))
                        .as("a key whose claim was lost, claimed again after re-arming")
                        .isInstanceOfSatisfying(
                                ClaimResult.Acquired.class,
                                c -> assertThat(c.fencingToken()).isGreaterThan(before));
            }
        }
    }

    /** Waits until the replica holds the master's fencing counter. */
    static void awaitReplicated(RedisProcess master, RedisProcess replica) {
        Awaitility.await("the replica catches up")
                .atMost(Duration.ofSeconds(20))
                .ignoreExceptions()
                .until(() -> master.info("replication", "master_repl_offset")
                        .equals(replica.info("replication", "slave_repl_offset")));
    }

    private static RedisStore store(String url) {
        return RedisStore.builder(url)
                .prefix("failover")
                .commandTimeout(Duration.ofSeconds(1))
                .armingDelay(Duration.ZERO)
                .build();
    }

    private static IdempotencyKey key(String k) {
        return IdempotencyKey.of(NAMESPACE, k);
    }

    private static ClaimRequest claimOf(String k, String owner) {
        return ClaimRequest.of(key(k), owner, LEASE);
    }
}
