package dev.idem;

import java.time.Duration;

/**
 * Called for every outcome and every warning. Implementations must be thread-safe; an exception thrown from a
 * listener is logged and otherwise ignored, it never changes an outcome.
 */
public interface IdempotencyListener {

    /** A listener that does nothing. */
    IdempotencyListener NONE = new IdempotencyListener() {};

    /**
     * One handling finished.
     *
     * @param namespace the guard's namespace
     * @param keyLogId the key's {@link IdempotencyKey#logId()}, or {@code "<invalid>"} when the key was rejected
     * @param outcome what happened
     * @param elapsed time spent in the guard, handler included
     */
    default void onOutcome(String namespace, String keyLogId, Outcome outcome, Duration elapsed) {}

    /** Something the operator should know about (fail-open passes, lost leases, lost marks). */
    default void onWarning(Warning warning) {}

    /**
     * A warning.
     *
     * @param kind what went wrong
     * @param namespace the namespace concerned
     * @param keyLogId the key concerned ({@link IdempotencyKey#logId()}), or {@code "*"} for a whole store
     * @param message readable detail, never the payload
     */
    record Warning(Kind kind, String namespace, String keyLogId, String message) {
        public enum Kind {
            /** The store was unavailable and a handler ran unguarded because fail-open was chosen. */
            FAIL_OPEN,
            /** The lease ended before completion; another consumer may have applied the effect too. */
            LEASE_LOST,
            /** The effect was applied but the completion could not be recorded (store unavailable). */
            COMPLETION_NOT_RECORDED,
            /** A failed handling's claim could not be released; redeliveries wait for the lease to end. */
            RELEASE_FAILED,
            /** A store detected that it lost marks (e.g. Redis restarted without persistence). */
            MARKS_LOST
        }
    }
}
