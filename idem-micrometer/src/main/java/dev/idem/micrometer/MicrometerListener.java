package dev.idem.micrometer;

import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;

/**
 * Turns Idem's events into Micrometer meters (names and tags: docs/micrometer.md). Tags are bounded: the namespace,
 * the outcome type, the warning kind — never the key, never the payload. Register it on each guard, inbox and store
 * ({@code .listener(new MicrometerListener(registry))}); the Spring Boot starter does so when Micrometer is present.
 * Thread-safe.
 */
public final class MicrometerListener implements IdempotencyListener {
    /** Timer: one handling, by namespace and outcome. */
    public static final String HANDLINGS = "idem.handlings";
    /** Counter: warnings (fail-open passes, lost leases, lost marks...), by namespace and kind. */
    public static final String WARNINGS = "idem.warnings";

    private final MeterRegistry registry;

    public MicrometerListener(MeterRegistry registry) {
        this.registry = Objects.requireNonNull(registry, "registry");
    }

    @Override
    public void onOutcome(String namespace, String keyLogId, Outcome outcome, Duration elapsed) {
        Timer.builder(HANDLINGS)
                .description("Handlings of a message by an Idem guard, by outcome")
                .tag("namespace", namespace)
                .tag("outcome", tag(outcome.type()))
                .register(registry)
                .record(elapsed);
    }

    @Override
    public void onWarning(Warning warning) {
        Counter.builder(WARNINGS)
                .description("Warnings an operator should know about (FAIL_OPEN, LEASE_LOST, MARKS_LOST, ...)")
                .tag("namespace", warning.namespace())
                .tag("kind", tag(warning.kind()))
                .register(registry)
                .increment();
    }

    private static String tag(Enum<?> value) {
        return value.name().toLowerCase(Locale.ROOT);
    }
}
