package dev.idem.id;

import dev.idem.StoreUnavailableException;
import dev.idem.id.IdGenerationException.Reason;
import dev.idem.id.spi.NodeIdGrant;
import dev.idem.id.spi.NodeIdLeaseStore;
import dev.idem.spi.UpdateResult;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * One generator's lease of a node id: acquired at start, renewed every third of the lease on a daemon thread,
 * released on close.
 *
 * <p>Each acquire or renewal reserves time: the generator may issue timestamps up to {@code reservedUntil} (the
 * generator's clock at the start of the call, plus 90% of the lease), and the store records that reservation as the
 * node id's high-water mark before the generator may use it. The store ends the lease a full lease after it
 * received the call, later than the reservation ends, so no other generator can hold the node id while this one
 * still issues (as long as the two clocks run at the same rate). When renewals fail (whatever the store throws) the
 * renewal keeps trying every tick; if none succeeds the reservation runs out and the generator stops issuing; when the store says another owner holds the node id, the lease is lost for good.
 */
final class NodeIdLease {
    private static final System.Logger LOG = System.getLogger(NodeIdLease.class.getName());

    private final NodeIdLeaseStore store;
    private final String space;
    private final Duration lease;
    private final long reachMillis;
    private final Clock clock;
    private final NodeIdGrant grant;
    private final ScheduledThreadPoolExecutor renewer;
    private volatile long validUntil;
    private volatile boolean lost;
    private volatile @Nullable String lastFailure;

    private NodeIdLease(
            NodeIdLeaseStore store, String space, Duration lease, Clock clock, NodeIdGrant grant, long validUntil) {
        this.store = store;
        this.space = space;
        this.lease = lease;
        this.reachMillis = reach(lease);
        this.clock = clock;
        this.grant = grant;
        this.validUntil = validUntil;
        this.renewer = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "idem-node-id-lease-" + space + "-" + grant.nodeId());
            t.setDaemon(true);
            return t;
        });
    }

    /** Leases the lowest free node id of {@code space}; does not renew until {@link #startRenewing()}. */
    static NodeIdLease acquire(NodeIdLeaseStore store, String space, int maxNodeId, Duration lease, Clock clock) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        String owner =
                HexFormat.of().toHexDigits(random.nextLong()) + HexFormat.of().toHexDigits(random.nextLong());
        long reservedUntil = clock.millis() + reach(lease);
        NodeIdGrant grant = store.acquire(space, owner, maxNodeId, lease, Instant.ofEpochMilli(reservedUntil))
                .orElseThrow(() -> new IdGenerationException(
                        Reason.NO_FREE_NODE_ID,
                        "every node id 0 to " + maxNodeId + " of id space '" + space + "' in " + store.describe()
                                + " is leased by a live generator: close unused generators, wait for a crashed one's"
                                + " lease to end (" + lease + "), or give the format more nodeBits",
                        null));
        return new NodeIdLease(store, space, lease, clock, grant, reservedUntil);
    }

    private static long reach(Duration lease) {
        return lease.toMillis() - lease.toMillis() / 10;
    }

    void startRenewing() {
        long period = Math.max(1, lease.toMillis() / 3);
        renewer.scheduleAtFixedRate(this::renew, period, period, TimeUnit.MILLISECONDS);
    }

    int nodeId() {
        return grant.nodeId();
    }

    /** The highest timestamp an earlier holder may have issued under this node id. */
    Instant grantedHighWaterMark() {
        return grant.highWaterMark();
    }

    /** The last millisecond (epoch millis) the generator may issue; {@link Long#MIN_VALUE} once lost. */
    long validUntil() {
        return validUntil;
    }

    /** Renews once; true when the store renewed the lease. Called by the renewal thread (and by tests). */
    boolean renew() {
        if (lost) {
            return false;
        }
        long reservedUntil = clock.millis() + reachMillis;
        try {
            UpdateResult result =
                    store.renew(space, grant.nodeId(), grant.owner(), lease, Instant.ofEpochMilli(reservedUntil));
            if (result == UpdateResult.APPLIED) {
                validUntil = reservedUntil;
                lastFailure = null;
                return true;
            }
            lost = true;
            validUntil = Long.MIN_VALUE;
            lastFailure = "the store answered " + result + " to the renewal";
            renewer.shutdown();
            LOG.log(
                    System.Logger.Level.ERROR,
                    "node id {0} of id space {1} is lost ({2}): this generator issues no more ids",
                    grant.nodeId(),
                    space,
                    result);
            return false;
        } catch (RuntimeException e) {
            // Any failure, not only an unavailable store: the next tick tries again, so one bug in a driver cannot
            // stop the renewals (and with them the generator) for good.
            lastFailure = e instanceof StoreUnavailableException ? e.getMessage() : e.toString();
            LOG.log(
                    System.Logger.Level.WARNING,
                    "node id {0} of id space {1}: renewal failed, ids stop at {2} unless a renewal succeeds: {3}",
                    grant.nodeId(),
                    space,
                    Instant.ofEpochMilli(validUntil),
                    lastFailure);
            return false;
        }
    }

    /** Why no id may be issued at {@code millis} (past {@link #validUntil()}). */
    IdGenerationException refusal(long millis) {
        String failure = lastFailure == null ? "" : " (last renewal: " + lastFailure + ")";
        if (lost) {
            return new IdGenerationException(
                    Reason.NODE_ID_LEASE_LOST,
                    "node id " + grant.nodeId() + " of id space '" + space + "' is held by another generator now"
                            + failure + ": this generator issues no more ids; close it and build a new one",
                    null);
        }
        return new IdGenerationException(
                Reason.NODE_ID_LEASE_EXPIRED,
                "node id " + grant.nodeId() + " of id space '" + space + "' was not renewed in time: the lease covers"
                        + " ids up to " + Instant.ofEpochMilli(validUntil) + ", the clock reads "
                        + Instant.ofEpochMilli(millis) + failure + "; ids resume when " + store.describe()
                        + " renews the lease",
                null);
    }

    /** Stops renewing and frees the node id, recording {@code highestIssued} as its high-water mark. */
    void release(Instant highestIssued) {
        renewer.shutdownNow();
        if (lost) {
            return;
        }
        Instant mark = highestIssued.isAfter(grant.highWaterMark()) ? highestIssued : grant.highWaterMark();
        try {
            store.release(space, grant.nodeId(), grant.owner(), mark);
        } catch (StoreUnavailableException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "node id {0} of id space {1} not released ({2}): it is free again when its lease ends",
                    grant.nodeId(),
                    space,
                    e.getMessage());
        }
    }
}
