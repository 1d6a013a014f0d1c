package dev.idem.spi;

import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import java.time.Duration;
import java.util.Objects;

/**
 * The one rule every broker adapter and Spring integration follows to settle a delivery: from an {@link Outcome}, or an
 * exception thrown by the handler, the guard or the transaction around them, and the message's {@link Attempts}, it
 * answers {@link Verdict.Ack ack}, {@link Verdict.Retry retry} (with the delay, counted or not) or {@link
 * Verdict.DeadLetter dead-letter} (with the reason).
 *
 * <ul>
 *   <li>{@code PROCESSED}, {@code DUPLICATE}: ack.
 *   <li>{@code REJECTED}: dead-letter at once.
 *   <li>{@code FAILED}, {@code OUT_OF_ORDER}: the handler's own; counted, retried after the policy's back-off, and
 *       dead-lettered once {@link RetryPolicy#exhausted(int)}.
 *   <li>{@code IN_PROGRESS}, and a {@code FAILED} whose cause is a store or database that cannot be reached (see
 *       {@link FailureClassifier}): a wait, never counted, never dead-lettered; its back-off grows to the cap.
 * </ul>
 *
 * A retry's delay is the policy's back-off, but never later than the outcome's own {@link Outcome#retryAfter()} (for
 * {@code IN_PROGRESS}: when the holder's lease ends), and never negative.
 *
 * <p>Immutable and thread-safe.
 */
public final class DeliveryDecision {
    /** Waits beyond this grow the back-off no further (it is long capped by then). */
    private static final int BACKOFF_GROWTH_LIMIT = 64;

    private final RetryPolicy retryPolicy;
    private final FailureClassifier classifier;

    private DeliveryDecision(RetryPolicy retryPolicy, FailureClassifier classifier) {
        this.retryPolicy = Objects.requireNonNull(retryPolicy, "retryPolicy");
        this.classifier = Objects.requireNonNull(classifier, "classifier");
    }

    /** The decision with {@link FailureClassifier#standard()}. */
    public static DeliveryDecision of(RetryPolicy retryPolicy) {
        return new DeliveryDecision(retryPolicy, FailureClassifier.standard());
    }

    /** The decision with a classifier that also knows a framework's exceptions (e.g. Spring's). */
    public static DeliveryDecision of(RetryPolicy retryPolicy, FailureClassifier classifier) {
        return new DeliveryDecision(retryPolicy, classifier);
    }

    public RetryPolicy retryPolicy() {
        return retryPolicy;
    }

    public FailureClassifier classifier() {
        return classifier;
    }

    /** The verdict on a handling that answered {@code outcome}, the message having been tried {@code before}. */
    public Verdict decide(Outcome outcome, Attempts before) {
        Outcome settled = classifier.waitingWhenUnreachable(outcome);
        return switch (settled.action()) {
            case ACK -> new Verdict.Ack(settled);
            case DEAD_LETTER -> new Verdict.DeadLetter(settled, before);
            case RETRY -> retry(settled, before);
        };
    }

    /** The verdict on a handling that threw {@code thrown} (see {@link FailureClassifier#classify(Throwable)}). */
    public Verdict decide(Throwable thrown, Attempts before) {
        return decide(classifier.classify(thrown), before);
    }

    private Verdict retry(Outcome outcome, Attempts before) {
        if (outcome.type() == Outcome.Type.IN_PROGRESS) {
            Attempts after = before.afterWait();
            return new Verdict.Retry(
                    outcome, delay(outcome, Math.min(after.waits(), BACKOFF_GROWTH_LIMIT)), false, after);
        }
        Attempts after = before.afterFailure();
        if (retryPolicy.exhausted(after.failures())) {
            return new Verdict.DeadLetter(
                    outcome.withReason("gave up after " + after.failures() + " attempts; last: " + outcome.reason()),
                    after);
        }
        return new Verdict.Retry(
                outcome, delay(outcome, Math.min(after.failures(), BACKOFF_GROWTH_LIMIT)), true, after);
    }

    private Duration delay(Outcome outcome, int attempt) {
        Duration backoff = retryPolicy.delayAfter(attempt);
        return outcome.retryAfter()
                .filter(hint -> hint.compareTo(backoff) < 0)
                .map(hint -> hint.isNegative() ? Duration.ZERO : hint) // a lease end already past: at once
                .orElse(backoff);
    }
}
