package dev.idem.redis;

import dev.idem.ConfigurationException;
import dev.idem.StoreUnavailableException;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.LettuceFutures;
import io.lettuce.core.MaintNotificationsConfig;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * A store's connection to Redis: opened on first use, shared by every thread, closed with the store (and the client
 * with it when the store created the client). Scripts go by SHA, their source re-sent once when the server lost its
 * script cache; every failure and every wait longer than the command timeout becomes a {@link
 * StoreUnavailableException}. Thread-safe.
 */
final class RedisLink {
    private final RedisClient client;
    private final boolean ownsClient;
    private final Duration commandTimeout;
    private final String description;
    private final Object connectLock = new Object();
    private volatile @Nullable StatefulRedisConnection<byte[], byte[]> connection;
    private volatile boolean closed;

    RedisLink(RedisClient client, boolean ownsClient, Duration commandTimeout, String description) {
        this.client = client;
        this.ownsClient = ownsClient;
        this.commandTimeout = commandTimeout;
        this.description = description;
    }

    /** Parses a URI of any form {@link RedisURI} takes. */
    static RedisURI parse(String redisUri) {
        Objects.requireNonNull(redisUri, "redisUri");
        try {
            return RedisURI.create(redisUri);
        } catch (IllegalArgumentException e) {
            throw new ConfigurationException(
                    "redis URI is not valid (" + e.getMessage() + "): use e.g. redis://127.0.0.1:6379", e);
        }
    }

    /**
     * A client for a store to own: commands fail at once while disconnected instead of queueing, and connecting and
     * every command wait at most {@code commandTimeout}.
     */
    static RedisClient createClient(RedisURI uri, Duration commandTimeout) {
        RedisClient created = RedisClient.create(uri);
        created.setOptions(ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .socketOptions(
                        SocketOptions.builder().connectTimeout(commandTimeout).build())
                .timeoutOptions(TimeoutOptions.enabled(commandTimeout))
                .maintNotificationsConfig(MaintNotificationsConfig.disabled())
                .build());
        return created;
    }

    /** Where a URI points, for descriptions: {@code host:port} or the Sentinel master. */
    static String where(RedisURI uri) {
        return uri.getHost() != null
                ? uri.getHost() + ":" + uri.getPort()
                : "sentinel master " + uri.getSentinelMasterId();
    }

    /** A script sent by SHA; {@link #await()} re-sends its source once when the server does not know the SHA. */
    final class Call<T> {
        private final Supplier<RedisFuture<T>> bySource;
        private final RedisFuture<T> future;

        Call(RedisFuture<T> future, Supplier<RedisFuture<T>> bySource) {
            this.future = future;
            this.bySource = bySource;
        }

        T await() {
            try {
                return RedisLink.this.await(future);
            } catch (StoreUnavailableException e) {
                if (!(e.getCause() instanceof RedisNoScriptException)) {
                    throw e;
                }
                return RedisLink.this.await(bySource.get());
            }
        }
    }

    /** Sends {@code script} now (without waiting, so that several calls share a round trip). */
    <T> Call<T> call(Script script, ScriptOutputType type, byte[][] keys, byte[][] args) {
        RedisAsyncCommands<byte[], byte[]> commands = commands();
        RedisFuture<T> bySha = commands.evalsha(script.sha(), type, keys, args);
        return new Call<>(bySha, () -> commands.eval(script.source(), type, keys, args));
    }

    <T> T await(RedisFuture<T> future) {
        try {
            return LettuceFutures.awaitOrCancel(future, commandTimeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (RedisException e) {
            throw new StoreUnavailableException(description, e.getClass().getSimpleName() + ": " + e.getMessage(), e);
        }
    }

    RedisAsyncCommands<byte[], byte[]> commands() {
        StatefulRedisConnection<byte[], byte[]> c = connection;
        if (c != null) {
            return c.async();
        }
        synchronized (connectLock) {
            if (closed) {
                throw new StoreUnavailableException(description, "the store is closed", null);
            }
            if (connection == null) {
                try {
                    StatefulRedisConnection<byte[], byte[]> opened = client.connect(ByteArrayCodec.INSTANCE);
                    opened.setTimeout(commandTimeout);
                    connection = opened;
                } catch (RedisException e) {
                    throw new StoreUnavailableException(description, "cannot connect: " + e.getMessage(), e);
                }
            }
            return Objects.requireNonNull(connection).async();
        }
    }

    /** Closes the connection, and the client if the store created it. Idempotent. */
    void close() {
        synchronized (connectLock) {
            if (closed) {
                return;
            }
            closed = true;
            StatefulRedisConnection<byte[], byte[]> c = connection;
            connection = null;
            if (c != null) {
                c.close();
            }
            if (ownsClient) {
                client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }
    }
}
