package dev.idem.id.spi;

import java.time.Instant;
import java.util.Objects;

/**
 * A node id leased to {@code owner} until {@code expiresAt} (the store's clock). {@code highWaterMark} is the
 * highest timestamp any earlier holder may have issued under this node id ({@link Instant#EPOCH} for a node id never
 * leased): the new holder issues only later timestamps, so a node that restarts with its clock behind cannot repeat
 * an id.
 */
public record NodeIdGrant(int nodeId, String owner, Instant highWaterMark, Instant expiresAt) {
    public NodeIdGrant {
        Objects.requireNonNull(owner, "owner");
        Objects.requireNonNull(highWaterMark, "highWaterMark");
        Objects.requireNonNull(expiresAt, "expiresAt");
        if (nodeId < 0) {
            throw new IllegalArgumentException("node id must not be negative, got " + nodeId);
        }
    }
}
