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
import dev.idem.spi.UpdateResult;
import dev.idem.testkit.MutableClock;
import dev.idem.testsupport.TestServers;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Mark loss on a redis-server of the test's own, started like the machine's (no persistence): restarting it, flushing
 * it, or flushing its script cache. Never touches the shared server.
 */
class RedisStoreMarkLossTest {
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final Duration RETENTION = Duration.ofHours(1);

    @RegisterExtension
    static final PrivateRedis redis = new PrivateRedis();

    private final MutableClock clock = MutableClock.atNow();
    private final RecordingListener listener = new RecordingListener();
    private final List<RedisStore> stores = new ArrayList<>();
    private String prefix;

    @BeforeEach
    void newPrefix() {
        prefix = TestServers.uniquePrefix("MarkLoss");
    }

    @AfterEach
    void closeStores() {
        stores.forEach(RedisStore::close);
    }

    private RedisStore store(RedisStore.MarkLossPolicy policy, Duration armingDelay) {
        RedisStore store = RedisStore.builder(redis.url())
                .prefix(prefix)
                .clock(clock)
                .commandTimeout(Duration.ofSeconds(1))
                .markLossPolicy(policy)
                .armingDelay(armingDelay)
                .listener(listener)
                .build();
        stores.add(store);
        return store;
    }

    /** A store that arms at once and runs no checks: only its own claims detect a loss. */
    private RedisStore store(RedisStore.MarkLossPolicy policy) {
        return store(policy, Duration.ZERO);
    }

    private RedisStore store() {
        return store(RedisStore.MarkLossPolicy.untilRearmed());
    }

    private static ClaimRequest claimOf(String key, String owner) {
        return ClaimRequest.of(IdempotencyKey.of("orders", key), owner, LEASE);
    }

    @Test
    void firstClaimSlowerThanTheArmingDelay_andTheCommandTimeout_stillWaitsOutTheArming() {
        // A first call held up longer than both (its connection set up on a loaded machine, the script loaded): the
        // arming wait is counted from the reply that asks for it, not from before the call. Seen in a CI run: the
        // first lease-guarded call of an application gave up after 10 s, "another store with a longer armingDelay".
        RedisStore store = store(RedisStore.MarkLossPolicy.untilRearmed(), Duration.ofMillis(300));
        RedisClient admin = RedisClient.create(redis.url());
        try (StatefulRedisConnection<String, String> pauser = admin.connect()) {
            pauser.sync().clientPause(2_500); // longer than 2 x 300 ms + the 1 s command timeout

            ClaimResult first = store.claim(claimOf("first", "owner-a"));

            assertThat(first).isInstanceOf(ClaimResult.Claimed.class);
        } finally {
            admin.shutdown();
        }
    }

    @Test
    void restartWithoutPersistence_failsClosedForEveryKey_andWarns_untilRearmed() {
        RedisStore store = store();
        long lastToken = 0;
        for (int i = 0; i < 5; i++) {
            var claimed = (ClaimResult.Claimed) store.claim(claimOf("done-" + i, "owner-a"));
            lastToken = claimed.fencingToken();
            assertThat(store.complete(IdempotencyKey.of("orders", "done-" + i), "owner-a", null, RETENTION))
                    .isEqualTo(UpdateResult.APPLIED);
        }

        clock.advance(Duration.ofSeconds(1)); // a restart takes time: fencing tokens restart above the old ones
        redis.restart();

        Awaitility.await("the store reconnects and sees the loss")
                .atMost(Duration.ofSeconds(20))
                .ignoreExceptionsMatching(
                        e -> e instanceof StoreUnavailableException && !(e instanceof RedisStore.MarksLostException))
                .untilAsserted(() -> assertThatThrownBy(() -> store.claim(claimOf("done-0", "owner-b")))
                        .isInstanceOf(RedisStore.MarksLostException.class));
        for (String k : List.of("done-1", "done-4", "never-seen")) {
            assertThatThrownBy(() -> store.claim(claimOf(k, "owner-b")))
                    .as(k)
                    .isInstanceOfSatisfying(RedisStore.MarksLostException.class, e -> {
                        assertThat(e.namespace()).isEqualTo("orders");
                        assertThat(e.getMessage()).contains("marks lost", "rearm()");
                    });
        }
        assertThat(listener.warnings).isNotEmpty().allSatisfy(w -> {
            assertThat(w.type()).isEqualTo(IdempotencyEvent.Type.MARKS_LOST);
            assertThat(w.namespace()).isEqualTo("orders");
        });
        RedisStore startedAfterTheLoss = store();
        assertThatThrownBy(() -> startedAfterTheLoss.claim(claimOf("done-2", "owner-c")))
                .as("a store started after the detection")
                .isInstanceOf(RedisStore.MarksLostException.class);

        AtomicInteger effects = new AtomicInteger();
        try (Guard guard = Guard.builder(store).namespace("orders").build()) {
            Outcome refused = guard.run("done-3", effects::incrementAndGet);
            assertThat(refused.type()).isEqualTo(Outcome.Type.IN_PROGRESS);
            assertThat(refused.reason()).contains("marks lost");
            assertThat(effects).hasValue(0);

            RedisStore operator = store();
            assertThat(operator.rearm()).as("found by scanning the prefix").containsExactly("orders");

            assertThat(guard.run("done-3", effects::incrementAndGet).type()).isEqualTo(Outcome.Type.PROCESSED);
            assertThat(effects).hasValue(1);
        }
        assertThat(startedAfterTheLoss.claim(claimOf("done-2", "owner-c")))
                .as("another store adopts the re-armed epoch")
                .isInstanceOf(ClaimResult.Claimed.class);
        long before = lastToken;
        assertThat(store.claim(claimOf("after-rearm", "owner-a")))
                .isInstanceOfSatisfying(
                        ClaimResult.Claimed.class,
                        c -> assertThat(c.fencingToken()).isGreaterThan(before));
    }

    @Test
    @Timeout(60)
    void restart_whileAStoreThatArmedTheNamespaceRuns_aStoreStartedAfterTheRestartFailsClosedToo() {
        Duration arming = Duration.ofSeconds(2);
        RedisStore armedIt = store(RedisStore.MarkLossPolicy.untilRearmed(), arming);
        armedIt.claim(claimOf("done-0", "owner-a"));
        assertThat(armedIt.complete(IdempotencyKey.of("orders", "done-0"), "owner-a", null, RETENTION))
                .isEqualTo(UpdateResult.APPLIED);

        redis.restart();
        RedisStore startedAfterTheRestart = store(RedisStore.MarkLossPolicy.untilRearmed(), arming);

        assertThatThrownBy(() -> startedAfterTheRestart.claim(claimOf("done-0", "owner-b")))
                .as("the completed key, claimed by a store that never saw the namespace before")
                .isInstanceOf(RedisStore.MarksLostException.class);
        assertThat(listener.warnings).isNotEmpty().allSatisfy(w -> {
            assertThat(w.type()).isEqualTo(IdempotencyEvent.Type.MARKS_LOST);
            assertThat(w.namespace()).isEqualTo("orders");
        });
        Awaitility.await("the store that armed the namespace is reconnected")
                .atMost(Duration.ofSeconds(20))
                .ignoreExceptionsMatching(
                        e -> e instanceof StoreUnavailableException && !(e instanceof RedisStore.MarksLostException))
                .untilAsserted(() -> assertThatThrownBy(() -> armedIt.claim(claimOf("new-key", "owner-a")))
                        .isInstanceOf(RedisStore.MarksLostException.class));
    }

    @Test
    @Timeout(60)
    void firstUse_withArmingDelay_armsAfterTheDelay_andAStoreArrivingMeanwhileAdoptsTheSameEpoch() throws Exception {
        Duration arming = Duration.ofMillis(600);
        RedisStore first = store(RedisStore.MarkLossPolicy.untilRearmed(), arming);
        RedisStore second = store(RedisStore.MarkLossPolicy.untilRearmed(), arming);

        var firstClaim = java.util.concurrent.CompletableFuture.supplyAsync(() -> first.claim(claimOf("k", "owner-a")));
        ClaimResult secondClaim = second.claim(claimOf("k", "owner-b"));

        assertThat(List.of(firstClaim.get(10, java.util.concurrent.TimeUnit.SECONDS), secondClaim))
                .as("one claim wins, the other sees it in progress")
                .hasAtLeastOneElementOfType(ClaimResult.Claimed.class)
                .hasAtLeastOneElementOfType(ClaimResult.InProgress.class);
        assertThat(first.claim(claimOf("other", "owner-a"))).isInstanceOf(ClaimResult.Claimed.class);
        assertThat(second.claim(claimOf("other", "owner-b"))).isInstanceOf(ClaimResult.InProgress.class);
        assertThat(listener.warnings).isEmpty();
    }

    @Test
    void flushedRedis_withRearmAfterPolicy_failsClosedForTheDelay_thenRearmsItself() {
        RedisStore store = store(RedisStore.MarkLossPolicy.rearmAfter(Duration.ofMinutes(1)));
        store.claim(claimOf("k", "owner-a"));
        flushAll();

        assertThatThrownBy(() -> store.claim(claimOf("k", "owner-b")))
                .isInstanceOf(RedisStore.MarksLostException.class);
        clock.advance(Duration.ofSeconds(59));
        assertThatThrownBy(() -> store.claim(claimOf("k", "owner-b")))
                .isInstanceOf(RedisStore.MarksLostException.class);
        clock.advance(Duration.ofSeconds(2));

        assertThat(store.claim(claimOf("k", "owner-b"))).isInstanceOf(ClaimResult.Claimed.class);
        assertThat(listener.warnings).hasSize(3).allMatch(w -> w.type() == IdempotencyEvent.Type.MARKS_LOST);
        assertThat(listener.warnings.get(2).message()).contains("re-armed by the mark-loss policy");
    }

    @Test
    void deletedSentinel_isALoss_evenWhenTheRecordsSurvive() {
        RedisStore store = store();
        store.claim(claimOf("k", "owner-a"));
        run(c -> c.sync().del(("{" + prefix + ":orders}:epoch").getBytes(java.nio.charset.StandardCharsets.UTF_8)));

        assertThatThrownBy(() -> store.claim(claimOf("other", "owner-b")))
                .isInstanceOf(RedisStore.MarksLostException.class);
    }

    @Test
    void failoverLosingTheLastClaims_isALoss_whenTheCounterFallsBelowATokenThisStoreHandedOut() {
        RedisStore store = store();
        store.claim(claimOf("before-snapshot", "owner-a"));
        byte[] fence = ("{" + prefix + ":orders}:fence").getBytes(java.nio.charset.StandardCharsets.UTF_8);
        byte[] counterAtSnapshot = fetch(c -> c.sync().get(fence));
        var lostClaim = (ClaimResult.Claimed) store.claim(claimOf("after-snapshot", "owner-a"));
        run(c -> {
            c.sync().set(fence, counterAtSnapshot);
            c.sync()
                    .del(("{" + prefix + ":orders}:r:after-snapshot")
                            .getBytes(java.nio.charset.StandardCharsets.UTF_8));
        });

        assertThatThrownBy(() -> store.claim(claimOf("after-snapshot", "owner-b")))
                .as("the replica promoted lacks the claim with token %d", lostClaim.fencingToken())
                .isInstanceOf(RedisStore.MarksLostException.class);
        assertThat(listener.warnings)
                .singleElement()
                .satisfies(w -> assertThat(w.type()).isEqualTo(IdempotencyEvent.Type.MARKS_LOST));
    }

    @Test
    void firstUse_ofAnEmptyRedis_armsTheNamespace_andClaims() {
        assertThat(store().claim(claimOf("k", "owner-a"))).isInstanceOf(ClaimResult.Claimed.class);
        assertThat(store().claim(claimOf("k", "owner-b"))).isInstanceOf(ClaimResult.InProgress.class);
        assertThat(listener.warnings).isEmpty();
    }

    @Test
    void flushedScriptCache_isRefilled_andTheClaimAnswers() {
        RedisStore store = store();
        store.claim(claimOf("k", "owner-a"));
        run(c -> c.sync().scriptFlush());

        assertThat(store.claim(claimOf("k", "owner-b"))).isInstanceOf(ClaimResult.InProgress.class);
        assertThat(store.complete(IdempotencyKey.of("orders", "k"), "owner-a", null, RETENTION))
                .isEqualTo(UpdateResult.APPLIED);
    }

    private void flushAll() {
        run(c -> c.sync().flushall());
    }

    private static <T> T fetch(java.util.function.Function<StatefulRedisConnection<byte[], byte[]>, T> query) {
        Object[] out = new Object[1];
        run(c -> out[0] = query.apply(c));
        @SuppressWarnings("unchecked")
        T value = (T) out[0];
        return value;
    }

    private static void run(java.util.function.Consumer<StatefulRedisConnection<byte[], byte[]>> action) {
        RedisClient client = RedisClient.create(redis.url());
        try (StatefulRedisConnection<byte[], byte[]> c =
                client.connect(io.lettuce.core.codec.ByteArrayCodec.INSTANCE)) {
            action.accept(c);
        } finally {
            client.shutdown();
        }
    }
}
