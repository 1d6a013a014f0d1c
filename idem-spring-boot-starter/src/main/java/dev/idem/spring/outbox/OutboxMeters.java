package dev.idem.spring.outbox;

import dev.idem.outbox.OutboxRelay;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.function.ToDoubleFunction;

/**
 * The outbox's gauges, tagged {@code table}: {@code idem.outbox.unsent} (the relay's lag, in messages), {@code
 * idem.outbox.parked} (messages the broker kept refusing) and {@code idem.outbox.oldest.unsent.age} (seconds).
 */
public final class OutboxMeters {
    public OutboxMeters(OutboxRelay relay, String table, MeterRegistry registry) {
        OutboxStatsCache stats = new OutboxStatsCache(relay);
        gauge(
                registry,
                "idem.outbox.unsent",
                "messages committed and not yet acknowledged by the broker",
                table,
                stats,
                s -> s.get().unsent());
        gauge(
                registry,
                "idem.outbox.parked",
                "messages the broker kept refusing, waiting for an operator",
                table,
                stats,
                s -> s.get().parked());
        gauge(
                registry,
                "idem.outbox.oldest.unsent.age",
                "age of the oldest unsent message that is not parked",
                table,
                stats,
                s -> s.get().oldestUnsentAge().toMillis() / 1000.0);
    }

    private static void gauge(
            MeterRegistry registry,
            String name,
            String description,
            String table,
            OutboxStatsCache stats,
            ToDoubleFunction<OutboxStatsCache> value) {
        Gauge.builder(name, stats, s -> {
                    try {
                        return value.applyAsDouble(s);
                    } catch (RuntimeException e) {
                        return Double.NaN;
                    }
                })
                .description(description)
                .tag("table", table)
                // The cache has no other owner: held weakly, the first collection turns every gauge to NaN.
                .strongReference(true)
                .register(registry);
    }
}
