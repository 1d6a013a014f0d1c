package dev.idem;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;

/**
 * How long to wait before the next delivery of a message that must be retried ({@link Outcome.Action#RETRY}), and
 * after how many attempts to give up and dead-letter it. Exponential backoff with jitter, capped.
 *
 * <p>Owned by the broker adapters: the component that applies a back-off is the one configured with it. A guard only
 * hints a delay ({@link Outcome#retryAfter()}).
 *
 * <pre>{@code
 * RetryPolicy policy = RetryPolicy.builder().initialDelay(Duration.ofMillis(100)).maxAttempts(5).build();
 * }</pre>
 *
 * <p>Immutable and thread-safe. {@link #defaults()} suits most consumers.
 */
public final class RetryPolicy {
    private static final RetryPolicy DEFAULTS = builder().build();

    private final Duration initialDelay;
    private final double multiplier;
    private final Duration maxDelay;
    private final int maxAttempts;
    private final double jitter;

    private RetryPolicy(Builder b) {
        this.initialDelay = b.initialDelay;
        this.multiplier = b.multiplier;
        this.maxDelay = b.maxDelay;
        this.maxAttempts = b.maxAttempts;
        this.jitter = b.jitter;
    }

    /** 200 ms, doubling, capped at 30 s, 10 attempts, 20% jitter. */
    public static RetryPolicy defaults() {
        return DEFAULTS;
    }

    /** A builder starting from {@link #defaults()}. */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder starting from this policy's values. */
    public Builder toBuilder() {
        return new Builder()
                .initialDelay(initialDelay)
                .multiplier(multiplier)
                .maxDelay(maxDelay)
                .maxAttempts(maxAttempts)
                .jitter(jitter);
    }

    /** Delay before the second attempt. */
    public Duration initialDelay() {
        return initialDelay;
    }

    /** Growth factor per attempt, at least 1. */
    public double multiplier() {
        return multiplier;
    }

    /** Cap on any delay. */
    public Duration maxDelay() {
        return maxDelay;
    }

    /** Attempts before a retried message is dead-lettered (1 = no retry). */
    public int maxAttempts() {
        return maxAttempts;
    }

    /** Fraction in [0, 1) by which each delay is randomly shortened or lengthened. */
    public double jitter() {
        return jitter;
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

    @Override
    public boolean equals(Object o) {
        return o instanceof RetryPolicy p
                && initialDelay.equals(p.initialDelay)
                && Double.compare(multiplier, p.multiplier) == 0
                && maxDelay.equals(p.maxDelay)
                && maxAttempts == p.maxAttempts
                && Double.compare(jitter, p.jitter) == 0;
    }

    @Override
    public int hashCode() {
        return Objects.hash(initialDelay, multiplier, maxDelay, maxAttempts, jitter);
    }

    @Override
    public String toString() {
        return "RetryPolicy[initialDelay=" + initialDelay + ", multiplier=" + multiplier + ", maxDelay=" + maxDelay
                + ", maxAttempts=" + maxAttempts + ", jitter=" + jitter + "]";
    }

    /** Builds a {@link RetryPolicy}. Each setter validates its value at once; {@link #build()} the rules between them. */
    public static final class Builder {
        private Duration initialDelay = Duration.ofMillis(200);
        private double multiplier = 2.0;
        private Duration maxDelay = Duration.ofSeconds(30);
        private int maxAttempts = 10;
        private double jitter = 0.2;

        private Builder() {}

        /** Delay before the second attempt, zero or positive. Default 200 ms. */
        public Builder initialDelay(Duration initialDelay) {
            if (initialDelay == null || initialDelay.isNegative()) {
                throw new ConfigurationException("retry initialDelay must be zero or positive, got " + initialDelay);
            }
            this.initialDelay = initialDelay;
            return this;
        }

        /** Growth factor per attempt, a finite number of at least 1. Default 2. */
        public Builder multiplier(double multiplier) {
            if (!(multiplier >= 1.0) || Double.isInfinite(multiplier)) {
                throw new ConfigurationException("retry multiplier must be a finite number >= 1, got " + multiplier);
            }
            this.multiplier = multiplier;
            return this;
        }

        /** Cap on any delay, at least {@link #initialDelay(Duration)}. Default 30 s. */
        public Builder maxDelay(Duration maxDelay) {
            if (maxDelay == null || maxDelay.isNegative()) {
                throw new ConfigurationException("retry maxDelay must be zero or positive, got " + maxDelay);
            }
            this.maxDelay = maxDelay;
            return this;
        }

        /** Attempts before a retried message is dead-lettered, at least 1 (1 = no retry). Default 10. */
        public Builder maxAttempts(int maxAttempts) {
            if (maxAttempts < 1) {
                throw new ConfigurationException("retry maxAttempts must be at least 1, got " + maxAttempts);
            }
            this.maxAttempts = maxAttempts;
            return this;
        }

        /** Fraction in [0, 1) by which each delay is randomly shortened or lengthened. Default 0.2. */
        public Builder jitter(double jitter) {
            if (!(jitter >= 0.0 && jitter < 1.0)) {
                throw new ConfigurationException("retry jitter must be in [0, 1), got " + jitter);
            }
            this.jitter = jitter;
            return this;
        }

        public RetryPolicy build() {
            if (maxDelay.compareTo(initialDelay) < 0) {
                throw new ConfigurationException(
                        "retry maxDelay (" + maxDelay + ") must be at least initialDelay (" + initialDelay + ")");
            }
            return new RetryPolicy(this);
        }
    }
}
