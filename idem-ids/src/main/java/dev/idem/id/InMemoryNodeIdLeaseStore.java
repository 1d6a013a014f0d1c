package dev.idem.id;

import dev.idem.IdempotencyKey;
import dev.idem.StoreUnavailableException;
import dev.idem.id.spi.NodeIdGrant;
import dev.idem.id.spi.NodeIdLeaseStore;
import dev.idem.spi.UpdateResult;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * Node id leases in this JVM's memory: for tests, and for several generators in one process. Leases end by the
 * store's clock. Thread-safe; each space is locked on its own, and only while a lease changes (not on the id hot
 * path, which never calls the store).
 */
public final class InMemoryNodeIdLeaseStore implements NodeIdLeaseStore {
    private final Clock clock;
    private final ConcurrentHashMap<String, Map<Integer, Lease>> spaces = new ConcurrentHashMap<>();
    private volatile boolean closed;

    private InMemoryNodeIdLeaseStore(Clock clock) {
        this.clock = clock;
    }

    /** A store on the system UTC clock. */
    public static InMemoryNodeIdLeaseStore create() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Builds {@link InMemoryNodeIdLeaseStore}s. */
    public static final class Builder {
        private Clock clock = Clock.systemUTC();

        private Builder() {}

        /** The clock that decides when a lease ends. Default: the system UTC clock. */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        public InMemoryNodeIdLeaseStore build() {
            return new InMemoryNodeIdLeaseStore(clock);
        }
    }

    private record Lease(@Nullable String owner, Instant expiresAt, Instant highWaterMark, Instant grantedMark) {}

    @Override
    public Optional<NodeIdGrant> acquire(
            String space, String owner, int maxNodeId, Duration lease, Instant reservedUntil) {
        Map<Integer, Lease> leases = space(space);
        synchronized (leases) {
            Instant now = clock.instant();
            for (int nodeId = 0; nodeId <= maxNodeId; nodeId++) {
                Lease current = leases.get(nodeId);
                if (current == null || current.owner() == null || !now.isBefore(current.expiresAt())) {
                    Instant mark = current == null ? Instant.EPOCH : current.highWaterMark();
                    Instant expiresAt = now.plus(lease);
                    leases.put(nodeId, new Lease(owner, expiresAt, max(mark, reservedUntil), mark));
                    return Optional.of(new NodeIdGrant(nodeId, owner, mark, expiresAt));
                }
            }
            return Optional.empty();
        }
    }

    @Override
    public UpdateResult renew(String space, int nodeId, String owner, Duration lease, Instant reservedUntil) {
        Map<Integer, Lease> leases = space(space);
        synchronized (leases) {
            Lease current = leases.get(nodeId);
            UpdateResult check = check(current, owner);
            if (check == UpdateResult.APPLIED && current != null) {
                leases.put(
                        nodeId,
                        new Lease(
                                owner,
                                clock.instant().plus(lease),
                                max(current.highWaterMark(), reservedUntil),
                                current.grantedMark()));
            }
            return check;
        }
    }

    @Override
    public UpdateResult release(String space, int nodeId, String owner, Instant highestIssued) {
        Map<Integer, Lease> leases = space(space);
        synchronized (leases) {
            Lease current = leases.get(nodeId);
            UpdateResult check = check(current, owner);
            if (check == UpdateResult.APPLIED && current != null) {
                Instant mark = max(current.grantedMark(), highestIssued);
                leases.put(nodeId, new Lease(null, clock.instant(), mark, mark));
            }
            return check;
        }
    }

    private static UpdateResult check(@Nullable Lease current, String owner) {
        if (current == null) {
            return UpdateResult.NOT_FOUND;
        }
        return owner.equals(current.owner()) ? UpdateResult.APPLIED : UpdateResult.NOT_OWNER;
    }

    /** The current high-water mark of a node id, {@link Instant#EPOCH} if it was never leased. */
    public Instant highWaterMark(String space, int nodeId) {
        Map<Integer, Lease> leases = space(space);
        synchronized (leases) {
            Lease lease = leases.get(nodeId);
            return lease == null ? Instant.EPOCH : lease.highWaterMark();
        }
    }

    private Map<Integer, Lease> space(String space) {
        if (closed) {
            throw new StoreUnavailableException(describe(), "the store is closed", null);
        }
        IdempotencyKey.validateNamespace(space);
        return spaces.computeIfAbsent(space, s -> new HashMap<>());
    }

    private static Instant max(Instant a, Instant b) {
        return a.isAfter(b) ? a : b;
    }

    @Override
    public String describe() {
        return "in-memory";
    }

    @Override
    public void close() {
        closed = true;
    }
}
