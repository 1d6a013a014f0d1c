package dev.idem.id;

import dev.idem.RetryLaterException;
import org.jspecify.annotations.Nullable;

/**
 * No id could be issued right now without risking a repeat: the clock stepped back further than allowed, the node
 * id's lease was not renewed in time, or the generator is closed. Nothing was issued; try again later (a clock
 * catches up, a lease is renewed) or build a new generator when {@link #reason()} says the node id is lost.
 */
public class IdGenerationException extends RetryLaterException {
    private static final long serialVersionUID = 1L;

    /** Why no id was issued. */
    public enum Reason {
        /** The clock reads earlier than the last id issued (or the node id's high-water mark) by more than allowed. */
        CLOCK_MOVED_BACKWARDS,
        /** The generator had to wait for its clock, and the clock did not advance. */
        CLOCK_NOT_ADVANCING,
        /** Every node id of the space is leased by a live generator. */
        NO_FREE_NODE_ID,
        /** The node id's lease was not renewed in time; issuing resumes if a renewal succeeds. */
        NODE_ID_LEASE_EXPIRED,
        /** Another generator holds the node id now: this generator never issues again. */
        NODE_ID_LEASE_LOST,
        /** The generator was closed. */
        CLOSED
    }

    private final Reason reason;

    public IdGenerationException(Reason reason, String message, @Nullable Throwable cause) {
        super(message, cause);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
