package dev.idem.redis;

import dev.idem.ConfigurationException;
import dev.idem.StoreUnavailableException;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.LettuceFutures;
import io.lettuce.core.MaintNotificationsConfig;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisKeyAsyncCommands;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * A store's connection to Redis (standalone, Sentinel-managed or a Cluster): opened on first use, shared by every
 * thread, closed with the store (and the client with it when the store created the client). Scripts go by SHA, their source re-sent once when the server lost its
 * script cache; every failure and every wait longer than the command timeout becomes a {@link
 * StoreUnavailableException}. Thread-safe.
 */
final class RedisLink {
    /** The longest wait between two reconnection attempts of a client the store created. */
    static final Duration RECONNECT_CAP = Duration.ofSeconds(1);

    private final Endpoint endpoint;
    private final boolean ownsClient;
    private final Duration commandTimeout;
    private final String description;
    private final Object connectLock = new Object();
    private volatile @Nullable Connected connection;
    private volatile boolean closed;
    private final AtomicLong resends = new AtomicLong();

    /** The client a link connects with: a standalone or Sentinel client, or a Cluster client. */
    sealed interface Endpoint {
        Connected connect();

        void shutdown();
    }

    record Standalone(RedisClient client) implements Endpoint {
        @Override
        public Connected connect() {
            StatefulRedisConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE);
            return new Connected(c, c.async(), () -> List.of(c.async()));
        }

        @Override
        public void shutdown() {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            client.getResources().shutdown(0, 2, TimeUnit.SECONDS);
        }
    }

    /** Scripts go to the master of their first key's slot; a scan visits every live master that serves slots. */
    record Cluster(RedisClusterClient client) implements Endpoint {
        @Override
        public Connected connect() {
            StatefulRedisClusterConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE);
            return new Connected(c, c.async(), () -> servingMasters(c));
        }

        private static List<RedisKeyAsyncCommands<byte[], byte[]>> servingMasters(
                StatefulRedisClusterConnection<byte[], byte[]> c) {
            List<RedisKeyAsyncCommands<byte[], byte[]>> masters = new ArrayList<>();
            for (RedisClusterNode node : c.getPartitions()) {
                if (node.is(RedisClusterNode.NodeFlag.UPSTREAM)
                        && !node.is(RedisClusterNode.NodeFlag.FAIL)
                        && !node.getSlots().isEmpty()) {
                    masters.add(c.getConnection(node.getNodeId()).async());
                }
            }
            return masters;
        }

        @Override
        public void shutdown() {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            client.getResources().shutdown(0, 2, TimeUnit.SECONDS);
        }
    }

    /** An open connection, its scripting commands, and the servers a scan of every key must visit. */
    record Connected(
            StatefulConnection<byte[], byte[]> connection,
            RedisScriptingAsyncCommands<byte[], byte[]> scripts,
            Supplier<List<RedisKeyAsyncCommands<byte[], byte[]>>> scanTargets) {}

    RedisLink(Endpoint endpoint, boolean ownsClient, Duration commandTimeout, String description) {
        this.endpoint = endpoint;
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
        RedisClient created = RedisClient.create(resources(), uri);
        created.setOptions(options(commandTimeout));
        return created;
    }

    /**
     * Resources for a client the store owns (shut down with it): reconnection attempts at most {@link
     * #RECONNECT_CAP} apart, so that a store is back within a fraction of the default arming delay after Redis
     * returns (Lettuce's default backs off to 30 s).
     */
    private static ClientResources resources() {
        return DefaultClientResources.builder()
                .reconnectDelay(Delay.exponential(Duration.ofMillis(1), RECONNECT_CAP, 2, TimeUnit.MILLISECONDS))
                .build();
    }

    private static ClientOptions options(Duration commandTimeout) {
        return ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .socketOptions(
                        SocketOptions.builder().connectTimeout(commandTimeout).build())
                .timeoutOptions(TimeoutOptions.enabled(commandTimeout))
                .maintNotificationsConfig(MaintNotificationsConfig.disabled())
                .build();
    }

    /**
     * A Cluster client for a store to own, with the same timeouts as {@link #createClient}, that re-reads the
     * topology at once (at most every second) when a node stops answering or redirects, and every 30 s anyway, so
     * that it follows a failover.
     */
    @SuppressWarnings("deprecation") // the reconnect-attempts trigger is what notices a master that died
    static RedisClusterClient createClusterClient(List<RedisURI> seeds, Duration commandTimeout) {
        RedisClusterClient created = RedisClusterClient.create(resources(), seeds);
        created.setOptions(ClusterClientOptions.builder(options(commandTimeout))
                .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                        .enableAllAdaptiveRefreshTriggers()
                        .adaptiveRefreshTriggersTimeout(Duration.ofSeconds(1))
                        .refreshTriggersReconnectAttempts(1)
                        .enablePeriodicRefresh(Duration.ofSeconds(30))
                        .build())
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
                resends.incrementAndGet();
                return RedisLink.this.await(bySource.get());
            }
        }

        /**
         * The reply when it comes, without waiting for it (the source re-sent once as by {@link #await()}); a failure,
         * or no reply within the command timeout, is a {@link StoreUnavailableException}. It completes on the
         * client's I/O thread (a client the store created times its commands out itself; a caller's may not).
         */
        CompletableFuture<T> answer() {
            CompletableFuture<T> answer = new CompletableFuture<>();
            future.whenComplete((value, failure) -> {
                if (failure != null && cause(failure) instanceof RedisNoScriptException) {
                    resend(answer);
                } else {
                    settle(answer, value, failure);
                }
            });
            return ownsClient ? answer : withinCommandTimeout(answer);
        }

        private CompletableFuture<T> withinCommandTimeout(CompletableFuture<T> answer) {
            CompletableFuture<T> bounded = new CompletableFuture<>();
            answer.orTimeout(commandTimeout.toNanos(), TimeUnit.NANOSECONDS).whenComplete((value, failure) -> {
                if (failure == null) {
                    bounded.complete(value);
                } else if (failure instanceof TimeoutException) {
                    bounded.completeExceptionally(
                            unavailable(new RedisCommandTimeoutException("no reply within " + commandTimeout)));
                } else {
                    bounded.completeExceptionally(failure);
                }
            });
            return bounded;
        }

        private void resend(CompletableFuture<T> answer) {
            resends.incrementAndGet();
            try {
                bySource.get().whenComplete((value, failure) -> settle(answer, value, failure));
            } catch (RuntimeException e) {
                answer.completeExceptionally(unavailable(e));
            }
        }
    }

    private <T> void settle(CompletableFuture<T> answer, @Nullable T value, @Nullable Throwable failure) {
        if (failure == null) {
            answer.complete(value);
        } else {
            answer.completeExceptionally(unavailable(cause(failure)));
        }
    }

    private static Throwable cause(Throwable failure) {
        return failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
    }

    private StoreUnavailableException unavailable(Throwable e) {
        return new StoreUnavailableException(description, e.getClass().getSimpleName() + ": " + e.getMessage(), e);
    }

    /**
     * How many scripts were sent again by their source so far: such a script runs after the commands sent meanwhile
     * on the connection, though it was first sent before them.
     */
    long resends() {
        return resends.get();
    }

    /** Sends {@code script} now (without waiting, so that several calls share a round trip). */
    <T> Call<T> call(Script script, ScriptOutputType type, byte[][] keys, byte[][] args) {
        RedisScriptingAsyncCommands<byte[], byte[]> commands = connected().scripts();
        RedisFuture<T> bySha = commands.evalsha(script.sha(), type, keys, args);
        return new Call<>(bySha, () -> commands.eval(script.source(), type, keys, args));
    }

    /**
     * The reply of a command already sent, within the command timeout. An interrupt does not end the wait (the
     * command may run on the server all the same: a completion given up on leaves an applied effect unrecorded,
     * a claim given up on holds its key until the lease ends); it is kept for the caller.
     */
    <T> T await(RedisFuture<T> future) {
        long deadline = System.nanoTime() + commandTimeout.toNanos();
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    future.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException | TimeoutException | CancellationException e) {
                    break; // awaitOrCancel below turns it into the store's exception
                }
            }
            return LettuceFutures.awaitOrCancel(
                    future, Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (RedisException e) {
            throw unavailable(e);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Key commands on each server that holds keys (one, or every live master of a Cluster), for a scan. */
    List<RedisKeyAsyncCommands<byte[], byte[]>> scanTargets() {
        try {
            return connected().scanTargets().get();
        } catch (RedisException e) {
            throw unavailable(e);
        }
    }

    private Connected connected() {
        Connected c = connection;
        if (c != null) {
            return c;
        }
        synchronized (connectLock) {
            if (closed) {
                throw new StoreUnavailableException(description, "the store is closed", null);
            }
            if (connection == null) {
                try {
                    Connected opened = endpoint.connect();
                    opened.connection().setTimeout(commandTimeout);
                    connection = opened;
                } catch (RedisException e) {
                    throw new StoreUnavailableException(description, "cannot connect: " + e.getMessage(), e);
                }
            }
            return Objects.requireNonNull(connection);
        }
    }

    /** Closes the connection, and the client if the store created it. Idempotent. */
    void close() {
        synchronized (connectLock) {
            if (closed) {
                return;
            }
            closed = true;
            Connected c = connection;
            connection = null;
            if (c != null) {
                c.connection().close();
            }
            if (ownsClient) {
                endpoint.shutdown();
            }
        }
    }
}
