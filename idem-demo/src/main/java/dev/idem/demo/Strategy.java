package dev.idem.demo;

import dev.idem.Outcome;

/** One way of consuming the order topic: its own consumer group, its own tables, its own guard (or none). */
interface Strategy extends AutoCloseable {
    /** Short name, also the consumer group suffix and the table prefix {@code lab_<id>}. */
    String id();

    /** What it uses, for the report. */
    String description();

    /** False for the unguarded baseline. */
    boolean guarded();

    default String prefix() {
        return "lab_" + id();
    }

    /** Handles one delivery completely: guard, effect, commit. Never throws for a message-level problem. */
    Outcome handle(Delivery delivery);

    @Override
    default void close() {}
}
