package dev.idem.spring;

import dev.idem.Outcome;
import io.micrometer.observation.Observation;
import org.jspecify.annotations.Nullable;

/**
 * What an {@code idem.handling} observation knows about one guarded call of an {@link Idempotent} method: only
 * bounded values (never the key, never the payload), for an {@code ObservationConvention} of your own.
 */
public final class IdempotentObservationContext extends Observation.Context {
    private final String namespace;
    private final String guardKind;
    private final String store;
    private @Nullable Outcome outcome;

    IdempotentObservationContext(String namespace, String guardKind, String store) {
        this.namespace = namespace;
        this.guardKind = guardKind;
        this.store = store;
    }

    public String namespace() {
        return namespace;
    }

    /** {@code inbox} (inside the application's transaction) or {@code lease} (outside one). */
    public String guardKind() {
        return guardKind;
    }

    /** The store's description, e.g. {@code postgresql idem_keys (inbox payments)}: one per store. */
    public String store() {
        return store;
    }

    /** The guard's outcome, or null when the guard itself threw. */
    public @Nullable Outcome outcome() {
        return outcome;
    }

    void outcome(Outcome outcome) {
        this.outcome = outcome;
    }
}
