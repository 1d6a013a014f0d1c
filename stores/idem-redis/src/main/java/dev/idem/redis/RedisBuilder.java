package dev.idem.redis;

import dev.idem.ConfigurationException;
import dev.idem.StoreUnavailableException;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The settings both Redis stores share: where Redis is, the key prefix, the clock and the command timeout. {@code
 * B} is the concrete builder. Each setter checks its value at once.
 */
public abstract class RedisBuilder<B extends RedisBuilder<B>> {
    private static final Pattern PREFIX = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");

    private final @Nullable RedisURI uri;
    private final @Nullable RedisClient client;
    private final @Nullable List<RedisURI> clusterSeeds;
    private final @Nullable RedisClusterClient clusterClient;
    String prefix = "idem";
    Clock clock = Clock.systemUTC();
    boolean clockSet;
    Duration commandTimeout = Duration.ofSeconds(2);

    RedisBuilder(@Nullable RedisURI uri, @Nullable RedisClient client) {
        this.uri = uri;
        this.client = client;
        this.clusterSeeds = null;
        this.clusterClient = null;
    }

    /** A builder for a Redis Cluster: seed nodes for a client the store creates, or the caller's client. */
    RedisBuilder(@Nullable List<RedisURI> clusterSeeds, @Nullable RedisClusterClient clusterClient) {
        this.uri = null;
        this.client = null;
        this.clusterSeeds = clusterSeeds == null ? null : List.copyOf(clusterSeeds);
        this.clusterClient = clusterClient;
    }

    /**
     * The first part of every key's hash tag: 1 to 64 characters of {@code [A-Za-z0-9._-]} starting with a letter or
     * digit. Stores of one prefix share their records. Default {@code idem}.
     */
    public B prefix(String prefix) {
        if (prefix == null || !PREFIX.matcher(prefix).matches()) {
            throw new ConfigurationException("prefix '" + prefix
                    + "' is not valid: use 1 to 64 characters of [A-Za-z0-9._-] starting with a letter or digit,"
                    + " e.g. 'idem' or 'orders-idem'");
        }
        this.prefix = prefix;
        return self();
    }

    /**
     * The clock that decides when leases and records end. Default: the system UTC clock; a {@link RedisStore} takes
     * the server's clock instead unless a clock is set here (see {@link RedisStore.Builder#useServerClock}).
     */
    public B clock(Clock clock) {
        this.clock = Objects.requireNonNull(clock, "clock");
        this.clockSet = true;
        return self();
    }

    /**
     * How long one call waits for Redis (and, for a client the store creates, for a connection) before it throws
     * {@link StoreUnavailableException}. Default 2 s.
     */
    public B commandTimeout(Duration commandTimeout) {
        this.commandTimeout = positive("commandTimeout", commandTimeout);
        return self();
    }

    /** Makes a store from a client: the caller's (never shut down by the store) or one created from the URIs. */
    interface StoreFactory<T> {
        T create(RedisLink.Endpoint endpoint, boolean ownsClient, String description);
    }

    <T> T buildWith(StoreFactory<T> factory) {
        if (client != null) {
            return factory.create(new RedisLink.Standalone(client), false, "redis (caller's client)");
        }
        if (clusterClient != null) {
            return factory.create(new RedisLink.Cluster(clusterClient), false, "redis cluster (caller's client)");
        }
        if (clusterSeeds != null) {
            return factory.create(
                    new RedisLink.Cluster(RedisLink.createClusterClient(clusterSeeds, commandTimeout)),
                    true,
                    "redis cluster " + RedisLink.where(clusterSeeds.get(0)));
        }
        RedisURI u = Objects.requireNonNull(uri);
        return factory.create(
                new RedisLink.Standalone(RedisLink.createClient(u, commandTimeout)),
                true,
                "redis " + RedisLink.where(u));
    }

    static Duration positive(String name, Duration value) {
        if (value == null || value.isNegative() || value.isZero()) {
            throw new ConfigurationException(name + " must be a positive duration, got " + value);
        }
        return value;
    }

    @SuppressWarnings("unchecked")
    private B self() {
        return (B) this;
    }
}
