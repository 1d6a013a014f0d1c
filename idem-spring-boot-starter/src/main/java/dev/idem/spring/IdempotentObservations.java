package dev.idem.spring;

import dev.idem.Outcome;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;
import io.micrometer.observation.ObservationRegistry;
import org.jspecify.annotations.Nullable;

/**
 * One Micrometer {@link Observation} ({@link DefaultIdempotentObservationConvention#NAME idem.handling}) around each
 * guarded call of an {@link Idempotent} method, current while the method runs, so that its own spans (JDBC, HTTP)
 * are children of it. Its error is what the call threw: the method's own exception, {@link
 * IdempotentRetryLaterException} or {@link IdempotentRejectedException}. The starter registers it when the
 * application has an {@link ObservationRegistry}.
 */
public final class IdempotentObservations implements IdempotentObserver {
    private static final DefaultIdempotentObservationConvention DEFAULT = new DefaultIdempotentObservationConvention();

    private final ObservationRegistry registry;
    private final @Nullable ObservationConvention<IdempotentObservationContext> convention;

    /** Observations in {@code registry}, named by {@code convention} (null for the default). */
    public IdempotentObservations(
            ObservationRegistry registry, @Nullable ObservationConvention<IdempotentObservationContext> convention) {
        this.registry = registry;
        this.convention = convention;
    }

    @Override
    public Handling start(String namespace, String guardKind, String store) {
        IdempotentObservationContext context = new IdempotentObservationContext(namespace, guardKind, store);
        Observation observation = Observation.createNotStarted(convention, DEFAULT, () -> context, registry)
                .start();
        Observation.Scope scope = observation.openScope();
        return new Handling() {
            @Override
            public void outcome(Outcome outcome) {
                context.outcome(outcome);
            }

            @Override
            public void error(Throwable error) {
                observation.error(error);
            }

            @Override
            public void stop() {
                scope.close();
                observation.stop();
            }
        };
    }
}
