package dev.idem.redis;

import static dev.idem.spi.StoredRecord.State.DONE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.ConfigurationException;
import dev.idem.Guard;
import dev.idem.IdempotencyKey;
import dev.idem.Outcome;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.StoredRecord;
import dev.idem.spi.UpdateResult;
import dev.idem.testkit.MutableClock;
import dev.idem.testkit.TcpProxy;
import dev.idem.testsupport.TestServers;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.SlotHash;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.awaitility.Awaitility;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** What the contract does not cover: client timeouts, key layout, builder rules, ownership of the client. */
class RedisStoreTest {
    private static final String PREFIX = TestServers.uniquePrefix("RedisStoreTest");
    private static final Duration LEASE = Duration.ofSeconds(30);

    private static TestServers.Server server;
    private final MutableClock clock = MutableClock.atNow();

    @BeforeAll
    static void findServer() {
        server = TestServers.redis();
    }

    @AfterAll
    static void deleteKeys() {
        RedisKeys.deleteAll(server.url(), PREFIX);
    }

    private RedisStore store(Clock clock) {
        return RedisStore.builder(server.url())
                .prefix(PREFIX)
                .clock(clock)
                .armingDelay(Duration.ZERO)
                .build();
    }

    private static ClaimRequest claimOf(IdempotencyKey key, String owner) {
        return ClaimRequest.of(key, owner, LEASE);
    }

    @Test
    void claimTimingOut_afterReachingRedis_isClaimedAgain_bySameOwnersRetry() {
        IdempotencyKey key = IdempotencyKey.of("timeouts", "pay-1");
        try (TcpProxy proxy = TcpProxy.start(server.host(), server.port());
                RedisStore viaProxy = RedisStore.builder("redis://127.0.0.1:" + proxy.port())
                        .prefix(PREFIX)
                        .clock(clock)
                        .commandTimeout(Duration.ofMillis(300))
                        .armingDelay(Duration.ZERO)
                        .build();
                RedisStore direct = store(clock)) {
            assertThat(viaProxy.lookup(key)).isEmpty();
            proxy.blackholeExisting();

            assertThatThrownBy(() -> viaProxy.claim(claimOf(key, "owner-a")))
                    .isInstanceOf(StoreUnavailableException.class)
                    .hasMessageContaining("RedisCommandTimeoutException");
            StoredRecord reached = Awaitility.await("the timed-out claim reached Redis")
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> direct.lookup(key), r -> r.isPresent())
                    .orElseThrow();
            assertThat(reached.owner()).isEqualTo("owner-a");
            proxy.dropAllConnections();

            ClaimResult retried = Awaitility.await("the store reconnects")
                    .atMost(Duration.ofSeconds(10))
                    .ignoreExceptionsInstanceOf(StoreUnavailableException.class)
                    .until(() -> viaProxy.claim(claimOf(key, "owner-a")), r -> true);

            assertThat(retried).isInstanceOfSatisfying(ClaimResult.Claimed.class, c -> {
                assertThat(c.owner()).isEqualTo("owner-a");
                assertThat(c.fencingToken()).isEqualTo(reached.fencingToken());
            });
            assertThat(direct.claim(claimOf(key, "owner-b"))).isInstanceOf(ClaimResult.InProgress.class);
        }
    }

    @Test
    void completeTimingOut_afterReachingRedis_isAppliedAgain_bySameOwnersRetry_keepingTheFirstResult() {
        IdempotencyKey key = IdempotencyKey.of("timeouts", "complete-1");
        try (TcpProxy proxy = TcpProxy.start(server.host(), server.port());
                RedisStore viaProxy = RedisStore.builder("redis://127.0.0.1:" + proxy.port())
                        .prefix(PREFIX)
                        .clock(clock)
                        .commandTimeout(Duration.ofMillis(300))
                        .armingDelay(Duration.ZERO)
                        .build();
                RedisStore direct = store(clock)) {
            assertThat(viaProxy.claim(claimOf(key, "owner-a"))).isInstanceOf(ClaimResult.Claimed.class);
            proxy.blackholeExisting();

            assertThatThrownBy(() -> viaProxy.complete(key, "owner-a", bytes("first"), Duration.ofHours(1)))
                    .isInstanceOf(StoreUnavailableException.class)
                    .hasMessageContaining("RedisCommandTimeoutException");
            Awaitility.await("the timed-out completion reached Redis")
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> direct.lookup(key).map(StoredRecord::state), s -> s.equals(Optional.of(DONE)));
            proxy.dropAllConnections();

            UpdateResult retried = Awaitility.await("the store reconnects")
                    .atMost(Duration.ofSeconds(10))
                    .ignoreExceptionsInstanceOf(StoreUnavailableException.class)
                    .until(() -> viaProxy.complete(key, "owner-a", bytes("second"), Duration.ofHours(1)), r -> true);

            assertThat(retried).as("the owner's own completion, retried").isEqualTo(UpdateResult.APPLIED);
            assertThat(direct.extend(key, "owner-a", LEASE))
                    .as("a watchdog tick racing the completion")
                    .isEqualTo(UpdateResult.APPLIED);
            assertThat(direct.complete(key, "owner-b", null, Duration.ofHours(1)))
                    .isEqualTo(UpdateResult.NOT_OWNER);
            assertThat(direct.release(key, "owner-a")).isEqualTo(UpdateResult.NOT_OWNER);
            assertThat(direct.lookup(key).orElseThrow().result()).isEqualTo(bytes("first"));
        }
    }

    @Test
    void keysOfOneNamespace_shareOneClusterSlot_andOnlyRecordsExpire() {
        try (RedisStore store = store(clock)) {
            IdempotencyKey key = IdempotencyKey.of("layout", "order-7:PAY");
            store.claim(claimOf(key, "owner-a"));
            store.complete(key, "owner-a", null, Duration.ofHours(2));
            String tag = "{" + PREFIX + ":layout}";

            withRedis(redis -> {
                List<String> keys = List.of(tag + ":r:order-7:PAY", tag + ":fence", tag + ":epoch");
                assertThat(redis.exists(keys.toArray(String[]::new))).isEqualTo(3);
                assertThat(keys).extracting(SlotHash::getSlot).containsOnly(SlotHash.getSlot(keys.get(0)));
                assertThat(redis.pttl(keys.get(0)))
                        .isPositive()
                        .isLessThanOrEqualTo(Duration.ofHours(3).toMillis());
                assertThat(redis.pttl(keys.get(1))).isEqualTo(-1);
                assertThat(redis.pttl(keys.get(2))).isEqualTo(-1);
                assertThat(redis.get(keys.get(0))).startsWith("D|"); // the record's state comes first
            });
        }
    }

    /**
     * Migration from 0.1: a record stored as a hash (fields s o t u c f r) by the earlier version is read as it was,
     * and the first script that writes it rewrites it as a string.
     */
    @Test
    void recordsOfTheEarlierHashFormat_areRead_andRewrittenAsStringsWhenWritten() {
        try (RedisStore store = store(clock)) {
            IdempotencyKey done = IdempotencyKey.of("hash-format", "done-1");
            IdempotencyKey held = IdempotencyKey.of("hash-format", "held-1");
            store.claim(claimOf(IdempotencyKey.of("hash-format", "arm"), "owner-x")); // arms the namespace
            String tag = "{" + PREFIX + ":hash-format}";
            long now = clock.instant().toEpochMilli();
            withRedis(redis -> {
                redis.hset(
                        tag + ":r:done-1",
                        java.util.Map.of(
                                "s",
                                "D",
                                "o",
                                "owner-a",
                                "t",
                                "7",
                                "u",
                                Long.toString(now + 3_600_000),
                                "c",
                                Long.toString(now),
                                "f",
                                "+print",
                                "r",
                                "+first"));
                redis.hset(
                        tag + ":r:held-1",
                        java.util.Map.of(
                                "s",
                                "P",
                                "o",
                                "owner-b",
                                "t",
                                "8",
                                "u",
                                Long.toString(now + 30_000),
                                "c",
                                Long.toString(now),
                                "f",
                                "-",
                                "r",
                                "-"));
            });

            StoredRecord record = store.lookup(done).orElseThrow();
            assertThat(record.state()).isEqualTo(DONE);
            assertThat(record.fencingToken()).isEqualTo(7);
            assertThat(record.result()).isEqualTo(bytes("first"));
            assertThat(store.claim(claimOf(done, "owner-c"))).isInstanceOf(ClaimResult.Done.class);
            assertThat(store.claim(claimOf(held, "owner-c"))).isInstanceOf(ClaimResult.InProgress.class);
            assertThat(store.complete(held, "owner-b", bytes("second"), Duration.ofHours(1)))
                    .isEqualTo(UpdateResult.APPLIED);

            withRedis(redis -> assertThat(redis.type(tag + ":r:held-1")).isEqualTo("string"));
            StoredRecord completed = store.lookup(held).orElseThrow();
            assertThat(completed.state()).isEqualTo(DONE);
            assertThat(completed.fencingToken()).isEqualTo(8);
            assertThat(completed.result()).isEqualTo(bytes("second"));
        }
    }

    /**
     * Issue 24 review: the packed record keeps owner and fingerprint by length and the result as the rest of the
     * string, so separators and digits inside them, a result of every byte value, an empty result and a large one all
     * come back as stored, through claim, lookup and a duplicate's claim.
     */
    @Test
    void packedRecords_keepFingerprintsAndResultsWithSeparatorsDigitsAndAnyBytes_asStored() {
        try (RedisStore store = store(clock)) {
            String fingerprint = "|D|1|2|3|4|5|+x|";
            byte[] everyByte = new byte[256 * 3];
            for (int i = 0; i < everyByte.length; i++) {
                everyByte[i] = (byte) i;
            }
            byte[] large = new byte[3 * 1024 * 1024];
            new java.util.Random(7).nextBytes(large);
            List<byte[]> results = List.of(everyByte, new byte[0], bytes("|P|9|9|9|0|0|"), large);
            for (int i = 0; i < results.size(); i++) {
                IdempotencyKey key = IdempotencyKey.of("packed", "k|" + i + "|");
                byte[] expected = results.get(i);
                ClaimRequest request = ClaimRequest.of(key, "owner|" + i, LEASE).withFingerprint(fingerprint);
                assertThat(store.claim(request)).isInstanceOf(ClaimResult.Claimed.class);
                assertThat(store.lookup(key).orElseThrow().fingerprint()).isEqualTo(fingerprint);
                assertThat(store.complete(key, "owner|" + i, results.get(i), Duration.ofHours(1)))
                        .isEqualTo(UpdateResult.APPLIED);

                StoredRecord record = store.lookup(key).orElseThrow();
                assertThat(record.owner()).isEqualTo("owner|" + i);
                assertThat(record.fingerprint()).isEqualTo(fingerprint);
                assertThat(record.result()).as("result %d", i).isEqualTo(results.get(i));
                ClaimResult again =
                        store.claim(ClaimRequest.of(key, "other", LEASE).withFingerprint(fingerprint));
                assertThat(again).isInstanceOfSatisfying(ClaimResult.Done.class, done -> {
                    assertThat(done.fingerprint()).isEqualTo(fingerprint);
                    assertThat(done.result()).isEqualTo(expected);
                });
            }
            IdempotencyKey none = IdempotencyKey.of("packed", "no-result");
            assertThat(store.claim(claimOf(none, "owner-n"))).isInstanceOf(ClaimResult.Claimed.class);
            assertThat(store.complete(none, "owner-n", null, Duration.ofHours(1)))
                    .isEqualTo(UpdateResult.APPLIED);
            assertThat(store.lookup(none).orElseThrow().result()).isNull();
        }
    }

    /**
     * Issue 24 review, rolling upgrade: a lapsed claim a 0.1 consumer left as a hash is taken over with a greater
     * fencing token, and a live one is extended and released by its owner, each write leaving a string record.
     */
    @Test
    void claimsOfTheEarlierHashFormat_areTakenOverWithAGreaterToken_extendedAndReleased() {
        try (RedisStore store = store(clock)) {
            store.claim(claimOf(IdempotencyKey.of("hash-claims", "arm"), "owner-x")); // arms the namespace
            String tag = "{" + PREFIX + ":hash-claims}";
            long now = clock.instant().toEpochMilli();
            long lapsedToken = 8; // drawn by 0.1 from the namespace's counter, as every token
            withRedis(redis -> {
                redis.hset(tag + ":r:lapsed", hashClaim("owner-a", lapsedToken, now - 1, now - 30_000));
                redis.hset(tag + ":r:live", hashClaim("owner-b", 9, now + 30_000, now));
            });
            IdempotencyKey lapsed = IdempotencyKey.of("hash-claims", "lapsed");
            IdempotencyKey live = IdempotencyKey.of("hash-claims", "live");

            assertThat(store.claim(claimOf(lapsed, "owner-c")))
                    .isInstanceOfSatisfying(ClaimResult.TakenOver.class, t -> {
                        assertThat(t.previousOwner()).isEqualTo("owner-a");
                        assertThat(t.fencingToken()).isGreaterThan(lapsedToken);
                    });
            assertThat(store.extend(live, "owner-b", Duration.ofMinutes(2))).isEqualTo(UpdateResult.APPLIED);
            StoredRecord extended = store.lookup(live).orElseThrow();
            assertThat(extended.fencingToken()).isEqualTo(9);
            assertThat(extended.expiresAt()).isEqualTo(clock.instant().plus(Duration.ofMinutes(2)));
            withRedis(redis -> {
                assertThat(redis.type(tag + ":r:lapsed")).isEqualTo("string");
                assertThat(redis.type(tag + ":r:live")).isEqualTo("string");
            });
            assertThat(store.release(live, "owner-b")).isEqualTo(UpdateResult.APPLIED);
            assertThat(store.lookup(live)).isEmpty();
        }
    }

    private static java.util.Map<String, String> hashClaim(String owner, long token, long until, long claimedAt) {
        return java.util.Map.of(
                "s",
                "P",
                "o",
                owner,
                "t",
                Long.toString(token),
                "u",
                Long.toString(until),
                "c",
                Long.toString(claimedAt),
                "f",
                "-",
                "r",
                "-");
    }

    /**
     * A batch whose claims share owner, fingerprint and lease sends them once; a batch whose claims differ sends each
     * claim's own, and each key keeps its own (owner, lease end and fingerprint, as another owner's claim reads them).
     */
    @Test
    void claimAll_ofClaimsWithTheirOwnTerms_storesEachKeysOwn_andOfSharedTerms_theSharedOnes() {
        try (RedisStore store = store(clock)) {
            List<ClaimRequest> own = List.of( // neighbours in key order that share two of the three terms
                    claim("a", "owner-a", 10, "fp-a"),
                    claim("b", "owner-a", 10, "fp-b"),
                    claim("c", "owner-c", 10, "fp-b"),
                    claim("d", "owner-c", 20, null));
            List<ClaimRequest> shared = List.of(claim("e", "owner-e", 40, "fp-e"), claim("f", "owner-e", 40, "fp-e"));

            assertThat(store.claimAll(own)).allSatisfy(r -> assertThat(r).isInstanceOf(ClaimResult.Claimed.class));
            assertThat(store.claimAll(shared)).allSatisfy(r -> assertThat(r).isInstanceOf(ClaimResult.Claimed.class));

            for (ClaimRequest claimed :
                    Stream.concat(own.stream(), shared.stream()).toList()) {
                assertThat(store.claim(claimOf(claimed.key(), "someone-else")))
                        .isInstanceOfSatisfying(ClaimResult.InProgress.class, p -> {
                            assertThat(p.owner()).isEqualTo(claimed.owner());
                            assertThat(p.leaseUntil()).isEqualTo(clock.instant().plus(claimed.lease()));
                            assertThat(p.fingerprint()).isEqualTo(claimed.fingerprint());
                        });
            }
        }
    }

    private static ClaimRequest claim(String key, String owner, int leaseSeconds, @Nullable String fingerprint) {
        return ClaimRequest.of(IdempotencyKey.of("terms", key), owner, Duration.ofSeconds(leaseSeconds))
                .withFingerprint(fingerprint);
    }

    @Test
    void claimAll_overTwoNamespaces_answersEachInRequestOrder() {
        try (RedisStore store = store(clock)) {
            IdempotencyKey a = IdempotencyKey.of("batch-a", "1");
            IdempotencyKey b = IdempotencyKey.of("batch-b", "1");
            store.claim(claimOf(b, "owner-x"));

            List<ClaimResult> results = store.claimAll(List.of(
                    claimOf(b, "owner-a"),
                    claimOf(a, "owner-a"),
                    claimOf(IdempotencyKey.of("batch-b", "2"), "owner-a")));

            assertThat(results.get(0)).isInstanceOf(ClaimResult.InProgress.class);
            assertThat(results.get(1)).isInstanceOf(ClaimResult.Claimed.class);
            assertThat(results.get(2)).isInstanceOf(ClaimResult.Claimed.class);
        }
    }

    @Test
    @Timeout(30)
    void slowHandler_withWatchdog_keepsItsClaimPastTheFirstLease() throws Exception {
        Duration lease = Duration.ofMillis(600);
        try (RedisStore store = store(Clock.systemUTC());
                Guard guard =
                        Guard.builder(store).namespace("watchdog").lease(lease).build()) {
            IdempotencyKey key = IdempotencyKey.of("watchdog", "slow-1");
            CountDownLatch running = new CountDownLatch(1);
            CountDownLatch finish = new CountDownLatch(1);
            AtomicInteger effects = new AtomicInteger();
            CompletableFuture<Outcome> first = CompletableFuture.supplyAsync(() -> guard.run("slow-1", () -> {
                running.countDown();
                assertThat(finish.await(20, TimeUnit.SECONDS)).isTrue();
                effects.incrementAndGet();
            }));
            assertThat(running.await(10, TimeUnit.SECONDS)).isTrue();
            Instant firstDeadline = store.lookup(key).orElseThrow().expiresAt();

            Awaitility.await("the watchdog extends the lease past its first deadline, and that deadline passes")
                    .atMost(Duration.ofSeconds(10))
                    .until(() -> Instant.now().isAfter(firstDeadline.plusMillis(100))
                            && store.lookup(key).orElseThrow().expiresAt().isAfter(Instant.now()));
            Outcome duplicate = guard.run("slow-1", effects::incrementAndGet);
            finish.countDown();

            assertThat(duplicate.type()).isEqualTo(Outcome.Type.IN_PROGRESS);
            assertThat(first.get(10, TimeUnit.SECONDS).type()).isEqualTo(Outcome.Type.PROCESSED);
            assertThat(guard.run("slow-1", effects::incrementAndGet).type()).isEqualTo(Outcome.Type.DUPLICATE);
            assertThat(effects).hasValue(1);
        }
    }

    @Test
    void storeOnCallersClient_leavesTheClientOpen_onClose() {
        RedisClient client = RedisClient.create(server.url());
        try {
            RedisStore store =
                    RedisStore.builder(client).prefix(PREFIX).clock(clock).build();
            assertThat(store.claim(claimOf(IdempotencyKey.of("owned", "k"), "owner-a")))
                    .isInstanceOf(ClaimResult.Claimed.class);
            store.close();

            assertThatThrownBy(() -> store.lookup(IdempotencyKey.of("owned", "k")))
                    .isInstanceOf(StoreUnavailableException.class)
                    .hasMessageContaining("closed");
            try (StatefulRedisConnection<String, String> c = client.connect()) {
                assertThat(c.sync().ping()).isEqualTo("PONG");
            }
        } finally {
            client.shutdown();
        }
    }

    @Test
    void builder_refusesBadSettings_namingTheFix() {
        assertThatThrownBy(() -> RedisStore.builder(server.url()).prefix("has{brace}"))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("prefix 'has{brace}' is not valid");
        assertThatThrownBy(() -> RedisStore.builder(server.url()).prefix(""))
                .isInstanceOf(ConfigurationException.class);
        assertThatThrownBy(() -> RedisStore.builder("not a uri"))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("redis://127.0.0.1:6379");
        assertThatThrownBy(() -> RedisStore.builder(server.url()).commandTimeout(Duration.ZERO))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("commandTimeout");
        assertThatThrownBy(() -> RedisStore.builder(server.url()).expiryMargin(Duration.ofSeconds(-1)))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("expiryMargin");
        assertThatThrownBy(() -> RedisStore.builder(server.url()).expiryMargin(Duration.ofNanos(500_000)))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("expiryMargin must be at least 1 ms");
        assertThatThrownBy(() -> RedisStore.MarkLossPolicy.rearmAfter(Duration.ofSeconds(-1)))
                .isInstanceOf(ConfigurationException.class);
    }

    @Test
    void describe_namesServerAndPrefix_neverThePassword() {
        try (RedisStore store = RedisStore.builder("redis://:s3cret@127.0.0.1:6390")
                .prefix("orders")
                .build()) {
            assertThat(store.describe())
                    .isEqualTo("redis 127.0.0.1:6390 prefix 'orders'")
                    .doesNotContain("s3cret");
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static void withRedis(java.util.function.Consumer<RedisCommands<String, String>> action) {
        RedisClient client = RedisClient.create(server.url());
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            action.accept(c.sync());
        } finally {
            client.shutdown();
        }
    }
}
