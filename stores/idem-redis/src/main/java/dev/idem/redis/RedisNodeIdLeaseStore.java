package dev.idem.redis;

import dev.idem.IdempotencyKey;
import dev.idem.id.spi.NodeIdGrant;
import dev.idem.id.spi.NodeIdLeaseStore;
import dev.idem.spi.UpdateResult;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * Node-id leases for {@link dev.idem.id.MessageIdGenerator}s in Redis (standalone or Sentinel-managed), on Lettuce.
 *
 * <pre>{@code
 * try (RedisNodeIdLeaseStore leases = RedisNodeIdLeaseStore.builder("redis://127.0.0.1:6379").build()) {
 *     MessageIdGenerator ids = MessageIdGenerator.builder().prefix("ORDER").nodeIdLease(leases, "orders").build();
 * }
 * }</pre>
 *
 * <p>An id space is one hash {@code {prefix:space}:node-ids} without TTL: per node id its owner, lease end, the mark
 * granted with the lease and the high-water mark, which no call deletes, so it outlives every lease. The hash tag
 * puts a space in one Redis Cluster slot. Each call is one Lua script (sent by SHA, its source re-sent when the
 * server lost its script cache), so acquire, renew and release are atomic; lease ends follow the store's {@link
 * Clock}.
 *
 * <p><b>Redis restarts.</b> Redis without persistence forgets every lease and mark when it restarts. A running
 * generator then learns at its next renewal ({@code NOT_FOUND}) that its lease is gone, and stops issuing; until
 * then it keeps issuing, while a generator started after the restart can be granted the same node id with no mark.
 * Between them only the reservation and each generator's own clock check protect against repeats. Use {@code
 * JdbcNodeIdLeaseStore} (idem-jdbc) when node ids must survive the store's restarts.
 *
 * <p>Thread-safe; its settings are immutable. It connects on first use; {@link #close()} closes the connection, and
 * the client only when the store created it.
 */
public final class RedisNodeIdLeaseStore implements NodeIdLeaseStore {

    private final String prefix;
    private final Clock clock;
    private final String description;
    private final RedisLink link;

    private RedisNodeIdLeaseStore(Builder b, RedisLink.Endpoint endpoint, boolean ownsClient, String description) {
        this.prefix = b.prefix;
        this.clock = b.clock;
        this.description = description + " prefix '" + b.prefix + "'";
        this.link = new RedisLink(endpoint, ownsClient, b.commandTimeout, this.description);
    }

    /**
     * A builder for a store that creates (and on {@link #close()} shuts down) its own client, from any URI {@link
     * RedisURI} takes, e.g. {@code redis://127.0.0.1:6379} or {@code rediss://user:password@host:6380/0}.
     */
    public static Builder builder(String redisUri) {
        return new Builder(RedisLink.parse(redisUri), null);
    }

    /** A builder for a store on a client the caller owns: the store never shuts it down. */
    public static Builder builder(RedisClient client) {
        return new Builder(null, Objects.requireNonNull(client, "client"));
    }

    @Override
    public Optional<NodeIdGrant> acquire(
            String space, String owner, int maxNodeId, Duration lease, Instant reservedUntil) {
        Objects.requireNonNull(owner, "owner");
        if (maxNodeId < 0) {
            throw new IllegalArgumentException("maxNodeId must not be negative, got " + maxNodeId);
        }
        byte[][] args = {
            utf8(owner), number(maxNodeId), number(clock.millis()), number(leaseMillis(lease)), number(reservedUntil)
        };
        List<Object> reply = link.<List<Object>>call(NodeIdScripts.ACQUIRE, ScriptOutputType.MULTI, key(space), args)
                .await();
        if (reply.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(new NodeIdGrant(
                (int) (long) (Long) reply.get(0),
                owner,
                Instant.ofEpochMilli((Long) reply.get(1)),
                Instant.ofEpochMilli((Long) reply.get(2))));
    }

    @Override
    public UpdateResult renew(String space, int nodeId, String owner, Duration lease, Instant reservedUntil) {
        byte[][] args = {
            number(checkNodeId(nodeId)),
            utf8(Objects.requireNonNull(owner, "owner")),
            number(clock.millis()),
            number(leaseMillis(lease)),
            number(reservedUntil)
        };
        return update(NodeIdScripts.RENEW, space, args);
    }

    @Override
    public UpdateResult release(String space, int nodeId, String owner, Instant highestIssued) {
        byte[][] args = {
            number(checkNodeId(nodeId)),
            utf8(Objects.requireNonNull(owner, "owner")),
            number(clock.millis()),
            number(highestIssued)
        };
        return update(NodeIdScripts.RELEASE, space, args);
    }

    private UpdateResult update(Script script, String space, byte[][] args) {
        byte[] reply = link.<byte[]>call(script, ScriptOutputType.VALUE, key(space), args)
                .await();
        return UpdateResult.valueOf(new String(reply, StandardCharsets.UTF_8));
    }

    /** The space's hash; its hash tag {@code {prefix:space}} keeps it in one Cluster slot. */
    private byte[][] key(String space) {
        IdempotencyKey.validateNamespace(space);
        return new byte[][] {utf8("{" + prefix + ":" + space + "}:node-ids")};
    }

    private static int checkNodeId(int nodeId) {
        if (nodeId < 0) {
            throw new IllegalArgumentException("node id must not be negative, got " + nodeId);
        }
        return nodeId;
    }

    private static long leaseMillis(Duration lease) {
        if (lease.isNegative() || lease.isZero()) {
            throw new IllegalArgumentException("lease must be positive, got " + lease);
        }
        return lease.toMillis();
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] number(long n) {
        return utf8(Long.toString(n));
    }

    private static byte[] number(Instant t) {
        return number(t.toEpochMilli());
    }

    @Override
    public String describe() {
        return description;
    }

    /** Closes the connection, and the client if the store created it. Idempotent. */
    @Override
    public void close() {
        link.close();
    }

    /** Builds a {@link RedisNodeIdLeaseStore}. Each setter validates its value at once. */
    public static final class Builder extends RedisBuilder<Builder> {

        private Builder(@Nullable RedisURI uri, @Nullable RedisClient client) {
            super(uri, client);
        }

        public RedisNodeIdLeaseStore build() {
            return buildWith(
                    (endpoint, owns, description) -> new RedisNodeIdLeaseStore(this, endpoint, owns, description));
        }
    }
}
