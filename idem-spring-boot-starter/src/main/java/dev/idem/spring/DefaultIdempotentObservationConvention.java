package dev.idem.spring;

import dev.idem.Outcome;
import io.micrometer.common.KeyValues;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;
import java.util.Locale;

/**
 * Names an {@link Idempotent} call's observation {@code idem.handling} (span {@code idem <namespace>}) with the
 * low-cardinality key values {@code idem.namespace}, {@code idem.guard.kind}, {@code idem.store} and {@code
 * idem.outcome} ({@code processed}, {@code duplicate}, ..., {@code none} when the guard threw). No high-cardinality
 * values: never the key, never the payload.
 */
public class DefaultIdempotentObservationConvention implements ObservationConvention<IdempotentObservationContext> {
    public static final String NAME = "idem.handling";

    @Override
    public String getName() {
        return NAME;
    }

    @Override
    public String getContextualName(IdempotentObservationContext context) {
        return "idem " + context.namespace();
    }

    @Override
    public KeyValues getLowCardinalityKeyValues(IdempotentObservationContext context) {
        Outcome outcome = context.outcome();
        return KeyValues.of(
                "idem.namespace", context.namespace(),
                "idem.guard.kind", context.guardKind(),
                "idem.store", context.store(),
                "idem.outcome", outcome == null ? "none" : outcome.type().name().toLowerCase(Locale.ROOT));
    }

    @Override
    public boolean supportsContext(Observation.Context context) {
        return context instanceof IdempotentObservationContext;
    }
}
