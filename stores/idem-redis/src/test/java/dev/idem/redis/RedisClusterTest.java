package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.Guard;
import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.Outcome;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.StoredRecord;
import dev.idem.spi.UpdateResult;
import dev.idem.testsupport.ReadmeSnippets;
import io.lettuce.core.cluster.SlotHash;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * The store on a real Redis Cluster of the test's own (three masters, one replica each), started once for the class;
 * the failover test, which kills a master, runs last.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RedisClusterTest {
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final String PREFIX = "cluster";

    private static LocalRedisCluster cluster;

    private final RecordingListener listener = new RecordingListener();
    private final List<RedisStore> stores = new ArrayList<>();

    @BeforeAll
    static void startCluster() {
        cluster = LocalRedisCluster.start();
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) {
            cluster.close();
        }
    }

    @AfterEach
    void closeStores() {
        stores.forEach(RedisStore::close);
    }

    @Test
    @Order(0)
    void docsClusterExample_runsOnTheCluster_onTheServerClock_andIsShownVerbatim() {
        String seedUri = cluster.seed();
        AtomicInteger charges = new AtomicInteger();

        // readme:redis-cluster begin
        RedisStore store = RedisStore.clusterBuilder(seedUri) // one or more nodes, e.g. redis://10.0.0.1:7000
                .useServerClock(true) // every lease ends by the clock of its master
                .build();
        Guard guard = Guard.builder(store).namespace("payments").build();
        // readme:redis-cluster end
        try (store;
                guard) {
            assertThat(guard.run("order-1", charges::incrementAndGet).type()).isEqualTo(Outcome.Type.PROCESSED);
            assertThat(guard.run("order-1", charges::incrementAndGet).type()).isEqualTo(Outcome.Type.DUPLICATE);
        }
        assertThat(charges).hasValue(1);
        ReadmeSnippets.assertShown(Path.of("src/test/java/dev/idem/redis/RedisClusterTest.java"), "redis-cluster");
    }

    @Test
    @Order(1)
    void namespacesOnEveryMaster_claimCompleteAndLookUp_inOneScriptEach_andRearmFindsThemAll() {
        RedisStore store = store(Duration.ZERO);
        List<String> namespaces = namespacesOnDistinctMasters();
        List<ClaimRequest> batch = new ArrayList<>();
        for (String ns : namespaces) {
            batch.add(claimOf(ns, "a", "owner-a"));
            batch.add(claimOf(ns, "b", "owner-a"));
        }

        assertThat(store.claimAll(batch)).hasSize(6).allMatch(r -> r instanceof ClaimResult.Claimed);
        for (String ns : namespaces) {
            IdempotencyKey a = IdempotencyKey.of(ns, "a");
            assertThat(store.complete(a, "owner-a", null, Duration.ofHours(1))).isEqualTo(UpdateResult.APPLIED);
            assertThat(store.lookup(a)).map(StoredRecord::state).contains(StoredRecord.State.DONE);
            assertThat(store.claim(claimOf(ns, "b", "owner-b"))).isInstanceOf(ClaimResult.InProgress.class);
        }
        AtomicInteger effects = new AtomicInteger();
        try (Guard guard = Guard.builder(store).namespace(namespaces.get(0)).build()) {
            assertThat(guard.run("c", effects::incrementAndGet).type()).isEqualTo(Outcome.Type.PROCESSED);
            assertThat(guard.run("c", effects::incrementAndGet).type()).isEqualTo(Outcome.Type.DUPLICATE);
        }
        assertThat(effects).hasValue(1);
        try (RedisStore operator = store(Duration.ZERO)) {
            assertThat(operator.rearm()).as("the scan visits every master").containsAll(namespaces);
        }
    }

    @Test
    @Order(2)
    @Timeout(120)
    void masterFailover_losingTheLastClaims_failsClosedOnEveryStore_andAfterRearmTokensExceedEveryEarlierOne() {
        String tag = "{" + PREFIX + ":orders}";
        RedisProcess master = cluster.masterOf(tag);
        RedisProcess replica = cluster.replicaOf(master);
        RedisStore first = store(Duration.ofMillis(600));
        first.claim(claimOf("orders", "replicated", "owner-a"));
        Awaitility.await("the replica holds the claim")
                .atMost(Duration.ofSeconds(20))
                .until(() -> replica.sync(c -> {
                            c.readOnly();
                            return c.exists(tag + ":r:replicated");
                        })
                        == 1);

        replica.pause();
        fillReplicationBuffers(master, tag);
        long highest = 0;
        for (int i = 0; i < 3; i++) {
            var claimed = (ClaimResult.Acquired) first.claim(claimOf("orders", "lost-" + i, "owner-a"));
            highest = Math.max(highest, claimed.fencingToken());
        }
        master.kill();
        replica.resume();
        Awaitility.await("the replica takes the master's slots over")
                .atMost(Duration.ofSeconds(30))
                .pollInterval(Duration.ofMillis(200))
                .ignoreExceptions()
                .until(() -> {
                    replica.sync(c -> c.clusterFailover(false, true));
                    return replica.info("replication", "role").equals("master");
                });

        awaitMarksLost("the store that handed out the lost tokens", first, "new-key");
        assertThat(afterTopologyRefresh(() -> first.lookup(IdempotencyKey.of("orders", "lost-0"))))
                .as("the promoted replica lacks the last claims")
                .isEmpty();
        RedisStore second = store(Duration.ofMillis(600));
        awaitMarksLost("a store started after the failover", second, "lost-0");
        assertThat(listener.warnings).isNotEmpty().allMatch(w -> w.type() == IdempotencyEvent.Type.MARKS_LOST);

        assertThat(second.rearm()).contains("orders");
        long before = highest;
        assertThat(List.of(
                        afterTopologyRefresh(() -> first.claim(claimOf("orders", "lost-0", "owner-c"))),
                        second.claim(claimOf("orders", "lost-1", "owner-c"))))
                .as("the keys whose claims were lost, claimed again")
                .allSatisfy(c ->
                        assertThat(((ClaimResult.Acquired) c).fencingToken()).isGreaterThan(before));
    }

    /**
     * Waits until {@code store}'s claim of {@code key} fails closed for the lost marks; until then a node may still
     * answer {@code CLUSTERDOWN} or redirect to the dead master (the store unavailable, a claim refused either way).
     */
    private static void awaitMarksLost(String who, RedisStore store, String key) {
        Awaitility.await(who + " sees the loss on the promoted replica")
                .atMost(Duration.ofSeconds(30))
                .ignoreExceptionsMatching(
                        e -> e instanceof StoreUnavailableException && !(e instanceof RedisStore.MarksLostException))
                .untilAsserted(() -> assertThatThrownBy(() -> store.claim(claimOf("orders", key, "owner-b")))
                        .isInstanceOf(RedisStore.MarksLostException.class));
    }

    /** Calls {@code call} until the client stops sending to the dead master (it re-reads the topology meanwhile). */
    private static <T> T afterTopologyRefresh(java.util.concurrent.Callable<T> call) {
        return Awaitility.await("the client follows the new topology")
                .atMost(Duration.ofSeconds(30))
                .ignoreExceptionsMatching(
                        e -> e instanceof StoreUnavailableException && !(e instanceof RedisStore.MarksLostException))
                .until(call, r -> true);
    }

    /**
     * Writes more than the kernel's socket buffers hold to the master while its replica is frozen, so that the writes
     * after it stay in the master's own replication buffer, which dies with the master.
     */
    private static void fillReplicationBuffers(RedisProcess master, String tag) {
        String junk = "x".repeat(1 << 20);
        master.sync(c -> {
            for (int i = 0; i < 32; i++) {
                c.set(tag + ":junk-" + i, junk);
            }
            return null;
        });
    }

    /** Three namespaces whose slots lie on three different masters. */
    private static List<String> namespacesOnDistinctMasters() {
        List<String> namespaces = new ArrayList<>();
        Set<Integer> masters = new HashSet<>();
        for (int i = 0; namespaces.size() < 3; i++) {
            String ns = "ns" + i;
            if (masters.add(cluster.masterOf("{" + PREFIX + ":" + ns + "}").port())) {
                namespaces.add(ns);
            }
        }
        assertThat(namespaces)
                .extracting(ns -> SlotHash.getSlot("{" + PREFIX + ":" + ns + "}"))
                .doesNotHaveDuplicates();
        return namespaces;
    }

    private RedisStore store(Duration armingDelay) {
        RedisStore store = RedisStore.clusterBuilder(cluster.seed())
                .prefix(PREFIX)
                .commandTimeout(Duration.ofSeconds(1))
                .armingDelay(armingDelay)
                .listener(listener)
                .build();
        stores.add(store);
        return store;
    }

    private static ClaimRequest claimOf(String namespace, String k, String owner) {
        return ClaimRequest.of(IdempotencyKey.of(namespace, k), owner, LEASE);
    }
}
