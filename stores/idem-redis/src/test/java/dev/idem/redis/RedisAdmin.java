package dev.idem.redis;

import dev.idem.IdempotencyKey;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.StatusOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Test helper: an operator's connection to a test's own Redis, which reads and writes its keys and pauses it ({@code
 * CLIENT PAUSE}), so that a store's command waits at the server while the test looks on.
 */
final class RedisAdmin implements AutoCloseable {
    private final RedisClient client;
    private final StatefulRedisConnection<String, String> connection;
    final RedisCommands<String, String> commands;

    RedisAdmin(String url) {
        client = RedisClient.create(url);
        connection = client.connect();
        commands = connection.sync();
    }

    /** {@code CLIENT PAUSE millis mode}: {@code WRITE} holds writes (scripts too) and answers reads; {@code ALL}. */
    void pause(long millis, String mode) {
        client("PAUSE", String.valueOf(millis), mode);
    }

    void unpause() {
        client("UNPAUSE");
    }

    private void client(String... args) {
        commands.dispatch(
                CommandType.CLIENT,
                new StatusOutput<>(StringCodec.UTF8),
                new CommandArgs<>(StringCodec.UTF8).addValues(args));
    }

    /** The Redis key of {@code key}'s record in {@code namespace} under {@code prefix}. */
    static String recordKey(String prefix, String namespace, String key) {
        return "{" + prefix + ":" + namespace + "}:r:"
                + IdempotencyKey.of(namespace, key).storedKey();
    }

    /** Claims {@code key} as owner-b as soon as its lease ends (a redelivery to another consumer), within 10 s. */
    static void takeOver(RedisStore other, IdempotencyKey key) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!(other.claim(ClaimRequest.of(key, "owner-b", Duration.ofSeconds(30)))
                instanceof ClaimResult.TakenOver)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no takeover within 10 s");
            }
            sleep(50);
        }
    }

    static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        connection.close();
        client.shutdown();
    }
}
