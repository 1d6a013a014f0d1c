package dev.idem.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Guard;
import dev.idem.IdempotencyListener.Warning;
import dev.idem.InMemoryStore;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

class MicrometerListenerTest {
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final MicrometerListener listener = new MicrometerListener(registry);

    @Test
    void handlings_areTimedByNamespaceAndOutcome_withoutTheKey() {
        try (InMemoryStore store = InMemoryStore.create()) {
            Guard guard = Guard.builder(store).namespace("payments").listener(listener).build();
            guard.run("order-1", () -> {});
            guard.run("order-1", () -> {});
            guard.run("order-2", () -> {
                throw new IllegalStateException("down");
            });
        }
        assertThat(registry.get(MicrometerListener.HANDLINGS)
                        .tags("namespace", "payments", "outcome", "processed")
                        .timer()
                        .count())
                .isEqualTo(1);
        assertThat(registry.get(MicrometerListener.HANDLINGS)
                        .tags("namespace", "payments", "outcome", "duplicate")
                        .timer()
                        .count())
                .isEqualTo(1);
        assertThat(registry.get(MicrometerListener.HANDLINGS)
                        .tags("namespace", "payments", "outcome", "failed")
                        .timer()
                        .count())
                .isEqualTo(1);
        assertThat(registry.getMeters())
                .allSatisfy(m -> assertThat(m.getId().getTags().toString()).doesNotContain("order-"));
    }

    @Test
    void warnings_areCountedByKind() {
        listener.onWarning(new Warning(Warning.Kind.MARKS_LOST, "payments", "*", "sentinel gone"));
        assertThat(registry.get(MicrometerListener.WARNINGS)
                        .tags("namespace", "payments", "kind", "marks_lost")
                        .counter()
                        .count())
                .isEqualTo(1.0);
    }
}
