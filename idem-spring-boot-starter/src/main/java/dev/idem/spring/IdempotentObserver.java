package dev.idem.spring;

import dev.idem.Outcome;

/**
 * Watches each guarded call of an {@link Idempotent} method: {@link IdempotentObservations} (a Micrometer {@code
 * Observation}) when the application has an {@code ObservationRegistry}, else nothing.
 */
interface IdempotentObserver {
    IdempotentObserver NONE = (namespace, guardKind, store) -> Handling.NONE;

    /** Starts watching one call, current on this thread until {@link Handling#stop()}. */
    Handling start(String namespace, String guardKind, String store);

    /** One watched call. */
    interface Handling {
        Handling NONE = new Handling() {
            @Override
            public void outcome(Outcome outcome) {}

            @Override
            public void error(Throwable error) {}

            @Override
            public void stop() {}
        };

        /** The guard's outcome (the call may still throw: a retry-later or rejected outcome, the method's own). */
        void outcome(Outcome outcome);

        /** What the call threw. */
        void error(Throwable error);

        void stop();
    }
}
