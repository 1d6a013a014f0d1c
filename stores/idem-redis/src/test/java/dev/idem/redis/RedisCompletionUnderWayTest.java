package dev.idem.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.Guard;
import dev.idem.IdempotencyKey;
import dev.idem.Outcome;
import dev.idem.StoreUnavailableException;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.UpdateResult;
import dev.idem.testsupport.TestServers;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A guard's completion on Redis is sent without waiting for its reply (the next command on the connection shares the
 * round trip). The server is the test's own: writes are paused ({@code CLIENT PAUSE … WRITE}) so that a completion
 * stays under way while reads still answer.
 */
@Timeout(60)
class RedisCompletionUnderWayTest {
    private static final long PAUSE_MILLIS = 3_000;

    @RegisterExtension
    static final PrivateRedis redis = new PrivateRedis();

    private final String prefix = TestServers.uniquePrefix("UnderWay");
    private final RedisAdmin admin = new RedisAdmin(redis.url());
    private final RedisCommands<String, String> server = admin.commands;
    private final RedisStore store = RedisStore.builder(redis.url())
            .prefix(prefix)
            .commandTimeout(Duration.ofSeconds(10))
            .armingDelay(Duration.ZERO)
            .build();
    private final Guard guard = Guard.builder(store)
            .namespace("payments")
            .lease(Duration.ofSeconds(30))
            .build();

    @AfterEach
    void closeAll() {
        admin.unpause();
        guard.close();
        store.close();
        admin.close();
    }

    @Test
    void theGuardAnswersBeforeTheCompletionsReply_andTheKeysNextClaimFindsItDone() {
        assertThat(guard.run("pay-0", () -> {}).type()).isEqualTo(Outcome.Type.PROCESSED); // scripts loaded, armed

        Outcome outcome = guard.run("pay-1", this::pauseWrites);

        assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(server.get(RedisAdmin.recordKey(prefix, "payments", "pay-1")))
                .as("the guard answered while its completion waited for the paused server")
                .startsWith("P|");
        assertThat(guard.run("pay-1", () -> {}).type())
                .as("the key's next claim runs after the completion on the same connection")
                .isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(server.get(RedisAdmin.recordKey(prefix, "payments", "pay-1")))
                .startsWith("D|");
    }

    @Test
    void close_waitsForTheCompletionsStillUnderWay() {
        assertThat(guard.run("pay-0", () -> {}).type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(guard.run("pay-1", this::pauseWrites).type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(server.get(RedisAdmin.recordKey(prefix, "payments", "pay-1")))
                .startsWith("P|");

        guard.close();
        store.close();

        assertThat(server.get(RedisAdmin.recordKey(prefix, "payments", "pay-1")))
                .as("closed only once its completion was recorded")
                .startsWith("D|");
    }

    @Test
    void aCompletionAfterTheServerLostItsScripts_isSentAgainWithTheScriptsSource() throws Exception {
        IdempotencyKey key = IdempotencyKey.of("payments", "pay-1");
        assertThat(store.claim(ClaimRequest.of(key, "owner-a", Duration.ofSeconds(30))))
                .isInstanceOf(ClaimResult.Claimed.class);
        server.scriptFlush();

        UpdateResult done = store.completeAsync(key, "owner-a", null, Duration.ofHours(1))
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);

        assertThat(done).isEqualTo(UpdateResult.APPLIED);
        assertThat(server.get(RedisAdmin.recordKey(prefix, "payments", "pay-1")))
                .startsWith("D|");
    }

    @Test
    void aCompletionRedisRefuses_failsItsStage_asTheStoreBeingUnavailable() {
        IdempotencyKey key = IdempotencyKey.of("payments", "pay-1");
        server.rpush(RedisAdmin.recordKey(prefix, "payments", "pay-1"), "not a record");

        assertThatThrownBy(() -> store.completeAsync(key, "owner-a", null, Duration.ofHours(1))
                        .toCompletableFuture()
                        .get(10, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .cause()
                .isInstanceOf(StoreUnavailableException.class)
                .hasMessageContaining("WRONGTYPE");
    }

    private void pauseWrites() {
        admin.pause(PAUSE_MILLIS, "WRITE");
    }
}
