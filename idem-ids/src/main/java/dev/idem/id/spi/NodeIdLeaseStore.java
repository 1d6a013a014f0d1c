package dev.idem.id.spi;

import dev.idem.StoreUnavailableException;
import dev.idem.spi.UpdateResult;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * Where message id generators lease their node ids, so that two live generators of one id space never share a node
 * id. Each record (space, node id) holds the current owner, the lease's end and the high-water mark: the highest
 * timestamp that any holder of the node id may have issued.
 *
 * <p>A generator reserves time ahead: with each acquire and renewal it passes the last millisecond it will issue
 * before its next renewal ({@code reservedUntil}), and it stops issuing when that passes. The store keeps the
 * greatest reservation as the high-water mark, so a later holder (after a crash, with a clock behind) starts above
 * it. On a clean release the holder passes the highest timestamp it really issued, so the next holder need not wait
 * for the unused part of the reservation.
 *
 * <p>Every operation is atomic for its record. Expected results are values; a store that cannot answer throws
 * {@link StoreUnavailableException}, and then the outcome of that call is unknown. Implementations are thread-safe.
 * The contract test suite is {@code dev.idem.testkit.NodeIdLeaseStoreContract}.
 */
public interface NodeIdLeaseStore extends AutoCloseable {

    /**
     * Leases the lowest node id in {@code 0..maxNodeId} of {@code space} that has no owner or whose lease has ended,
     * to {@code owner} for {@code lease} from now. The grant carries the high-water mark as it was before this call;
     * the stored mark becomes the greater of it and {@code reservedUntil}. Empty when every node id is held by a
     * live lease. Two concurrent calls never get the same node id.
     */
    Optional<NodeIdGrant> acquire(String space, String owner, int maxNodeId, Duration lease, Instant reservedUntil);

    /**
     * Renews {@code owner}'s lease of the node id to {@code lease} from now, and raises the high-water mark to
     * {@code reservedUntil} if that is greater. A lease that ended but that nobody took since still belongs to its
     * owner and is renewed. {@link UpdateResult#NOT_OWNER} when another owner holds the node id (or it was released),
     * {@link UpdateResult#NOT_FOUND} when there is no record.
     */
    UpdateResult renew(String space, int nodeId, String owner, Duration lease, Instant reservedUntil);

    /**
     * Frees {@code owner}'s node id at once and sets its high-water mark to {@code highestIssued} (the highest
     * timestamp issued under the lease), or to the mark granted with the lease if that is greater. Owner-checked like
     * {@link #renew}.
     */
    UpdateResult release(String space, int nodeId, String owner, Instant highestIssued);

    /** A short description for messages and logs, e.g. {@code "in-memory"}, {@code "postgresql idem_node_ids"}. */
    String describe();

    /** Releases what the store owns (connections it created). Idempotent. */
    @Override
    void close();
}
