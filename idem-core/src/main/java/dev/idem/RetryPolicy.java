package dev.idem;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * How long to wait before the next delivery of a message that must be retried ({@link Outcome.Action#RETRY}), and
 * after how many attempts to give up and dead-letter it. Exponential backoff with jitter, capped.
 *
 * <p>Immutable and thread-safe. Broker adapters take one of these; {@link #defaults()} suits most consumers.
 *
 * @param initialDelay delay before the second attempt
 * @param multiplier growth factor per attempt, at least 1
 * @param maxDelay cap on any delay
 * @param maxAttempts attempts before a retried message is dead-lettered (1 = no retry)
 * @param jitter fraction in [0, 1) by which each delay is randomly shortened or lengthened
 */
public record RetryPolicy(Duration initialDelay, double multiplier, Duration maxDelay, int maxAttempts, double jitter) {

    public RetryPolicy {
        if (initialDelay == null || initialDelay.isNegative()) {
            throw new ConfigurationException("retry initialDelay must be zero or positive, got " + initialDelay);
        }
        if (maxDelay == null || maxDelay.compareTo(initialDelay) < 0) {
            throw new ConfigurationException(
                    "retry maxDelay (" + maxDelay + ") must be at least initialDelay (" + initialDelay + ")");
        }
        if (!(multiplier >= 1.0) || Double.isInfinite(multiplier)) {
            throw new ConfigurationException("retry multiplier must be a finite number >= 1, got " + multiplier);
        }
        if (maxAttempts < 1) {
            throw new ConfigurationException("retry maxAttempts must be at least 1, got " + maxAttempts);
        }
        if (!(jitter >= 0.0 && jitter < 1.0)) {
            throw new ConfigurationException("retry jitter must be in [0, 1), got " + jitter);
        }
    }

    /** 200 ms, doubling, capped at 30 s, 10 attempts, 20% jitter. */
    public static RetryPolicy defaults() {
        return new RetryPolicy(Duration.ofMillis(200), 2.0, Duration.ofSeconds(30), 10, 0.2);
    }

    public RetryPolicy withInitialDelay(Duration value) {
        return new RetryPolicy(
                value, multiplier, maxDelay.compareTo(value) < 0 ? value : maxDelay, maxAttempts, jitter);
    }

    public RetryPolicy withMaxDelay(Duration value) {
        return new RetryPolicy(initialDelay, multiplier, value, maxAttempts, jitter);
    }

    public RetryPolicy withMultiplier(double value) {
        return new RetryPolicy(initialDelay, value, maxDelay, maxAttempts, jitter);
    }

    public RetryPolicy withMaxAttempts(int value) {
        return new RetryPolicy(initialDelay, multiplier, maxDelay, value, jitter);
    }

    public RetryPolicy withJitter(double value) {
        return new RetryPolicy(initialDelay, multiplier, maxDelay, maxAttempts, value);
    }

    /** The delay after the {@code attempt}-th failed attempt (1-based), jittered and capped. */
    public Duration delayAfter(int attempt) {
        if (attempt < 1) {
            throw new IllegalArgumentException("attempt is 1-based, got " + attempt);
        }
        double base = initialDelay.toNanos() * Math.pow(multiplier, attempt - 1);
        double capped = Math.min(base, maxDelay.toNanos());
        double factor = jitter == 0 ? 1.0 : 1.0 + ThreadLocalRandom.current().nextDouble(-jitter, jitter);
        return Duration.ofNanos((long) Math.min(capped * factor, maxDelay.toNanos()));
    }

    /** True when {@code attempts} deliveries have been made and no more are allowed. */
    public boolean exhausted(int attempts) {
        return attempts >= maxAttempts;
    }
}
