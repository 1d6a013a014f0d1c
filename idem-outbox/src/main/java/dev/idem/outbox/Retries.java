package dev.idem.outbox;

import java.time.Duration;
import java.util.Optional;
import java.util.TreeSet;

/**
 * When the messages this relay backed off come due again (epoch milliseconds on the relay's clock), so that an idle
 * relay looks then rather than at its poll. Not thread-safe: used within the relay's cycle lock.
 */
final class Retries {
    private final TreeSet<Long> due = new TreeSet<>();

    void backedOff(long retryAtMillis) {
        due.add(retryAtMillis);
    }

    /** A cycle looks for due messages as of {@code nowMillis}: the retries due by then are its to find. */
    void looking(long nowMillis) {
        due.headSet(nowMillis, true).clear();
    }

    /** How long until the next retry comes due; empty when none is pending. */
    Optional<Duration> untilNext(long nowMillis) {
        return due.isEmpty() ? Optional.empty() : Optional.of(Duration.ofMillis(Math.max(0, due.first() - nowMillis)));
    }
}
