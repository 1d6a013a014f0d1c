package dev.idem.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Guard;
import dev.idem.IdempotencyEvent;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

class MicrometerListenerTest {
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final MicrometerListener listener = new MicrometerListener(registry);

    @Test
    void handlings_areTimedByNamespaceGuardKindAndOutcome_withoutTheKey() {
        try (InMemoryStore store = InMemoryStore.create()) {
            Guard guard = Guard.builder(store)
                    .namespace("payments")
                    .listener(listener)
                    .build();
            guard.run("order-1", () -> {});
            guard.run("order-1", () -> {});
            guard.run("order-2", () -> {
                throw new IllegalStateException("down");
            });
        }
        for (String outcome : new String[] {"processed", "duplicate", "failed"}) {
            assertThat(registry.get(MicrometerListener.HANDLINGS)
                            .tags("namespace", "payments", "guard.kind", "lease", "outcome", outcome)
                            .timer()
                            .count())
                    .as(outcome)
                    .isEqualTo(1);
        }
        assertThat(registry.getMeters())
                .allSatisfy(m -> assertThat(m.getId().getTags().toString()).doesNotContain("order-"));
    }

    @Test
    void retriesDeadLettersAndWarnings_areCountedBySourceAndKind() {
        listener.onEvent(IdempotencyEvent.builder(IdempotencyEvent.Type.RETRY_SCHEDULED, "payments")
                .source("spring-kafka")
                .outcome(Outcome.inProgress("held", null))
                .attempt(1)
                .build());
        listener.onEvent(IdempotencyEvent.builder(IdempotencyEvent.Type.DEAD_LETTERED, "payments")
                .source("spring-kafka")
                .outcome(Outcome.rejected("bad key"))
                .build());
        listener.onEvent(IdempotencyEvent.builder(IdempotencyEvent.Type.MARKS_LOST, "payments")
                .source("redis")
                .message("sentinel gone")
                .build());
        assertThat(registry.get(MicrometerListener.RETRIES)
                        .tags("namespace", "payments", "source", "spring-kafka", "outcome", "in_progress")
                        .counter()
                        .count())
                .isEqualTo(1.0);
        assertThat(registry.get(MicrometerListener.DEAD_LETTERS)
                        .tags("outcome", "rejected")
                        .counter()
                        .count())
                .isEqualTo(1.0);
        assertThat(registry.get(MicrometerListener.WARNINGS)
                        .tags("namespace", "payments", "kind", "marks_lost", "source", "redis")
                        .counter()
                        .count())
                .isEqualTo(1.0);
    }
}
