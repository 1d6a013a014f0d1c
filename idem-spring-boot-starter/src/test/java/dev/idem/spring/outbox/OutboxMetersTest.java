package dev.idem.spring.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.outbox.OutboxRelay;
import dev.idem.outbox.OutboxSchema;
import dev.idem.testsupport.TestDatabase;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.ref.WeakReference;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** The outbox's gauges keep reading the relay's stats for as long as the registry holds them. */
class OutboxMetersTest {

    @Test
    void theGauges_stillReadTheStats_afterAGarbageCollection() {
        try (TestDatabase db = TestDatabase.h2("OutboxMetersTest")) {
            OutboxSchema.create(db.dataSource());
            OutboxRelay relay = OutboxRelay.builder(db.dataSource(), record -> CompletableFuture.completedFuture(null))
                    .build();
            MeterRegistry registry = new SimpleMeterRegistry();
            new OutboxMeters(relay, "idem_outbox", registry);
            assertThat(registry.get("idem.outbox.unsent").gauge().value()).isZero();

            collectWeaklyReachableObjects();

            // A gauge holds its state object weakly unless told otherwise: collected, it answers NaN for good (seen
            // in the loaded suite as OutboxAutoConfigurationTest's gauge never reaching 1).
            assertThat(registry.get("idem.outbox.unsent").gauge().value()).isZero();
            assertThat(registry.get("idem.outbox.parked").gauge().value()).isZero();
            assertThat(registry.get("idem.outbox.oldest.unsent.age").gauge().value())
                    .isZero();
        }
    }

    /** Runs the collector until an object only weakly reachable is gone (the JVM may ignore one request). */
    private static void collectWeaklyReachableObjects() {
        WeakReference<Object> canary = new WeakReference<>(new Object());
        for (int i = 0; i < 50 && canary.get() != null; i++) {
            System.gc();
        }
        assertThat(canary.get()).as("a garbage collection ran").isNull();
    }
}
