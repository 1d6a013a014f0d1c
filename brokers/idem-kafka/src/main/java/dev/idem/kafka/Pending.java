package dev.idem.kafka;

import dev.idem.Outcome;
import dev.idem.spi.Attempts;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

/**
 * One fetched record that is not final yet, with its retry state. Handled by one lane at a time (the lane's tasks run
 * one after the other), so its fields need no lock.
 */
final class Pending<K, V> {
    final ConsumerRecord<byte[], byte[]> raw;
    final PartitionProgress.Slot slot;
    /** What the decision counted so far: the handler's failures (bounded) and the waits in a row (never bounded). */
    Attempts attempts = Attempts.NONE;
    /** Handler runs, whatever they ended in. */
    int runs;
    /** Failed sends to the dead-letter topic. */
    int deadLetterTries;
    /** Decided to dead-letter, not yet acknowledged by the dead-letter topic. */
    @Nullable
    Outcome deadLetter;
    /** The deserialized record and its key, once read. */
    @Nullable
    Read<K, V> read;

    Pending(ConsumerRecord<byte[], byte[]> raw, PartitionProgress.Slot slot) {
        this.raw = raw;
        this.slot = slot;
    }

    /** A deserialized record with its key, or why it cannot be handled. */
    record Read<K, V>(
            @Nullable KeyedRecord<K, V> record, @Nullable Outcome rejection) {}
}
