package dev.idem.internal;

import dev.idem.ConfigurationException;
import dev.idem.spi.ClaimRequest;
import java.time.Duration;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The one rule for a lease and for a guard's other durations: stores keep whole milliseconds ({@link
 * ClaimRequest#SHORTEST_LEASE}), and their time arithmetic holds up to about 100 years ({@link
 * ClaimRequest#LONGEST_LEASE}: a deadline in epoch milliseconds below 2^53, exact in a Redis script's numbers).
 */
public final class LeaseBounds {
    private LeaseBounds() {}

    /** What is wrong with {@code value} as the duration called {@code name}, if anything. */
    public static Optional<String> problem(String name, @Nullable Duration value) {
        if (value == null || value.compareTo(ClaimRequest.SHORTEST_LEASE) < 0) {
            return Optional.of(name + " must be at least 1 ms (stores keep whole milliseconds), got " + value);
        }
        return tooLong(name, value);
    }

    /** {@code value} as the setting called {@code name}, or a {@link ConfigurationException} saying what is wrong. */
    public static Duration setting(String name, @Nullable Duration value) {
        Optional<String> problem = problem(name, value);
        if (problem.isPresent() || value == null) {
            throw new ConfigurationException(problem.orElseThrow());
        }
        return value;
    }

    /** The upper half of {@link #problem}, for a duration that may be zero. */
    public static Optional<String> tooLong(String name, Duration value) {
        if (value.compareTo(ClaimRequest.LONGEST_LEASE) > 0) {
            return Optional.of(name + " must be at most " + ClaimRequest.LONGEST_LEASE.toDays()
                    + " days (about 100 years), got " + value + ": a longer one overflows the stores' time arithmetic");
        }
        return Optional.empty();
    }
}
