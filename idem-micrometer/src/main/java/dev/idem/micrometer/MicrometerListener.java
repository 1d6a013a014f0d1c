package dev.idem.micrometer;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.util.Locale;
import java.util.Objects;

/**
 * Turns Idem's events into Micrometer meters; docs/micrometer.md lists every name and tag. Tags are bounded: the
 * namespace, the guard kind, the source (a store's or broker adapter's name), the outcome type, the warning kind —
 * never the key, never the payload. Register it on each guard, inbox, store and adapter ({@code .listener(new
 * MicrometerListener(registry))}); the Spring Boot starter does so when Micrometer is present. Thread-safe.
 */
public final class MicrometerListener implements IdempotencyListener {
    /** Timer: one handling by a guard ({@code HANDLED}). */
    public static final String HANDLINGS = "idem.handlings";
    /** Counter: retries a broker adapter scheduled ({@code RETRY_SCHEDULED}). */
    public static final String RETRIES = "idem.retries";
    /** Counter: messages sent to a dead-letter destination ({@code DEAD_LETTERED}). */
    public static final String DEAD_LETTERS = "idem.dead.letters";
    /** Counter: acknowledgements or commits by a broker adapter ({@code COMMITTED}). */
    public static final String COMMITS = "idem.commits";
    /** Counter: warnings (fail-open passes, lost leases, lost marks, ...). */
    public static final String WARNINGS = "idem.warnings";

    private final MeterRegistry registry;

    public MicrometerListener(MeterRegistry registry) {
        this.registry = Objects.requireNonNull(registry, "registry");
    }

    @Override
    public void onEvent(IdempotencyEvent event) {
        Tags tags = Tags.of(
                "namespace", event.namespace(),
                "guard.kind", tag(event.guardKind()),
                "source", event.source());
        Outcome outcome = event.outcome();
        Tags withOutcome = tags.and("outcome", outcome == null ? "none" : tag(outcome.type()));
        switch (event.type()) {
            case HANDLED ->
                Timer.builder(HANDLINGS)
                        .description("Handlings of a message by an Idem guard, by outcome")
                        .tags(withOutcome)
                        .register(registry)
                        .record(event.elapsed());
            case RETRY_SCHEDULED -> count(RETRIES, "Retries scheduled by a broker adapter", withOutcome);
            case DEAD_LETTERED -> count(DEAD_LETTERS, "Messages sent to a dead-letter destination", withOutcome);
            case COMMITTED -> count(COMMITS, "Acknowledgements or commits by a broker adapter", tags);
            default ->
                count(
                        WARNINGS,
                        "Warnings an operator should look at (MARKS_LOST, LEASE_LOST, FAIL_OPEN, ...)",
                        tags.and("kind", tag(event.type())));
        }
    }

    private void count(String name, String description, Tags tags) {
        Counter.builder(name)
                .description(description)
                .tags(tags)
                .register(registry)
                .increment();
    }

    private static String tag(Enum<?> value) {
        return value.name().toLowerCase(Locale.ROOT);
    }
}
