package dev.idem.outbox;

import dev.idem.outbox.spi.OutboxRecord;
import java.time.Instant;
import java.util.List;

/**
 * What the relay reports. Every method has a no-op default; a listener that throws is ignored (logged), it never
 * stops the relay. Called on the relay's thread: return quickly.
 */
public interface OutboxListener {
    OutboxListener NONE = new OutboxListener() {};

    /** {@code records} were acknowledged by the broker and marked sent. */
    default void published(List<OutboxRecord> records) {}

    /**
     * Publishing {@code record} failed; it is published again from {@code retryAt} (its key's later messages wait).
     *
     * @param refused the broker refused it (this counts towards parking), rather than failing to answer
     */
    default void publishFailed(OutboxRecord record, Throwable failure, boolean refused, Instant retryAt) {}

    /** The broker kept refusing {@code record}: it is parked with {@code reason} until an operator unparks it. */
    default void parked(OutboxRecord record, String reason) {}

    /** A relay cycle failed (the database could not be reached, ...): the relay backs off and tries again. */
    default void relayFailed(Throwable failure) {}
}
