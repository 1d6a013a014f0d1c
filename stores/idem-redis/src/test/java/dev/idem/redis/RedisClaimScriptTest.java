package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.IdempotencyKey;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.UpdateResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The claim script on a server of each test's own: the commands it runs, counted by the server ({@code INFO
 * commandstats}: a free key is claimed by a single {@code SET NX}, without reading it first; only a taken key is read),
 * what it answers when the server refuses writes, what it leaves when a batch fails part-way.
 */
class RedisClaimScriptTest {
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final int KEYS = 50;

    @Test
    @Timeout(60)
    void freeKeys_areClaimedWithoutAReadEach_takenKeysAreRead() {
        try (RedisProcess redis = RedisProcess.server("claim-commands");
                RedisStore store = storeOn(redis, "commands")) {
            store.claim(ClaimRequest.of(key("arming"), "owner-a", LEASE)); // arms the namespace
            long getsBefore = calls(redis, "get");
            long setsBefore = calls(redis, "set");

            List<ClaimResult> free = store.claimAll(claims("free-", "owner-a"));

            assertThat(free).allSatisfy(r -> assertThat(r).isInstanceOf(ClaimResult.Acquired.class));
            assertThat(calls(redis, "get") - getsBefore)
                    .as("GETs for %d free keys", KEYS)
                    .isZero();
            assertThat(calls(redis, "set") - setsBefore)
                    .as("one SET per key and one for the fencing counter")
                    .isEqualTo(KEYS + 1);

            long getsBeforeTaken = calls(redis, "get");
            List<ClaimResult> taken = store.claimAll(claims("free-", "owner-b"));

            assertThat(taken).allSatisfy(r -> assertThat(r).isInstanceOf(ClaimResult.InProgress.class));
            assertThat(calls(redis, "get") - getsBeforeTaken)
                    .as("one GET per taken key")
                    .isEqualTo(KEYS);
        }
    }

    /**
     * A server that refuses writes ({@code maxmemory} reached under {@code noeviction}, as the docs advise) still
     * answers a done key and a key held by another owner: their claims fall back to a read when the write is refused.
     */
    @Test
    @Timeout(60)
    void aServerRefusingWrites_stillAnswersDoneAndHeldKeys() {
        try (RedisProcess redis = RedisProcess.server("claim-refused-writes");
                RedisStore store = storeOn(redis, "full")) {
            store.claim(ClaimRequest.of(key("done"), "owner-a", LEASE));
            assertThat(store.complete(key("done"), "owner-a", null, Duration.ofHours(1)))
                    .isEqualTo(UpdateResult.APPLIED);
            store.claim(ClaimRequest.of(key("held"), "owner-a", LEASE));
            redis.sync(c -> c.configSet("maxmemory-policy", "noeviction"));
            redis.sync(c -> c.configSet("maxmemory", "1"));

            List<ClaimResult> answers = store.claimAll(List.of(
                    ClaimRequest.of(key("done"), "owner-b", LEASE), ClaimRequest.of(key("held"), "owner-b", LEASE)));

            assertThat(answers.get(0)).isInstanceOf(ClaimResult.Done.class);
            assertThat(answers.get(1))
                    .isInstanceOfSatisfying(
                            ClaimResult.InProgress.class,
                            held -> assertThat(held.owner()).isEqualTo("owner-a"));
        }
    }

    /**
     * A batch that fails part-way (a key of another Redis type) keeps the claims it wrote before the failure: the
     * counter must be past their tokens, or a later claim is handed one of them again (two holders, one token). The
     * counter starts far above the server's ms × 1000, as in a namespace that hands out tokens fast.
     */
    @Test
    @Timeout(60)
    void aBatchFailingPartWay_neverHandsOutItsTokensAgain() {
        try (RedisProcess redis = RedisProcess.server("claim-part-way");
                RedisStore store = storeOn(redis, "partway")) {
            store.claim(ClaimRequest.of(key("arming"), "owner-a", LEASE));
            long serverMsTimes1000 = redis.sync(c -> Long.parseLong(c.time().get(0))) * 1_000_000;
            redis.sync(c -> c.set("{partway:orders}:fence", Long.toString(serverMsTimes1000 + 1_000_000_000)));
            redis.sync(c -> c.rpush("{partway:orders}:r:" + key("b-list").storedKey(), "not a record"));

            assertThatThrownBy(() -> store.claimAll(List.of(
                            ClaimRequest.of(key("a-free"), "owner-a", LEASE),
                            ClaimRequest.of(key("b-list"), "owner-a", LEASE))))
                    .hasMessageContaining("RedisCommandExecutionException: WRONGTYPE");
            long written = store.lookup(key("a-free")).orElseThrow().fencingToken();

            assertThat(store.claim(ClaimRequest.of(key("c-later"), "owner-b", LEASE)))
                    .isInstanceOfSatisfying(
                            ClaimResult.Acquired.class,
                            c -> assertThat(c.fencingToken()).isGreaterThan(written));
        }
    }

    /** A store on {@code redis} that arms a namespace at once. */
    private static RedisStore storeOn(RedisProcess redis, String prefix) {
        return RedisStore.builder(redis.url())
                .prefix(prefix)
                .armingDelay(Duration.ZERO)
                .build();
    }

    private static List<ClaimRequest> claims(String prefix, String owner) {
        List<ClaimRequest> claims = new ArrayList<>();
        IntStream.range(0, KEYS).forEach(i -> claims.add(ClaimRequest.of(key(prefix + i), owner, LEASE)));
        return claims;
    }

    private static IdempotencyKey key(String k) {
        return IdempotencyKey.of("orders", k);
    }

    /** How many times the server ran {@code command}, scripts' calls included. */
    private static long calls(RedisProcess redis, String command) {
        Matcher m = Pattern.compile("calls=(\\d+)").matcher(redis.info("commandstats", "cmdstat_" + command));
        return m.find() ? Long.parseLong(m.group(1)) : 0;
    }
}
