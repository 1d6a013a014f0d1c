package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.micrometer.MicrometerListener;
import dev.idem.redis.RedisStore;
import dev.idem.spi.IdempotencyStore;
import dev.idem.spring.actuate.IdemEndpoint;
import dev.idem.spring.actuate.IdemHealthIndicator;
import dev.idem.testsupport.PrivateServer;
import dev.idem.testsupport.TestDatabase;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.health.contributor.Status;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** On PostgreSQL, with a private Redis (no persistence) as the lease store, so that a test can make it lose marks. */
class PaymentsAppPostgresTest extends PaymentsAppContract {
    static final TestDatabase DB = TestDatabase.postgres("spring_app");
    static final PrivateServer REDIS = PrivateServer.redis();

    @Autowired
    IdempotencyStore leaseStore;

    @Autowired
    IdemHealthIndicator health;

    @Autowired
    IdemEndpoint endpoint;

    @Autowired
    MeterRegistry meters;

    @DynamicPropertySource
    static void properties(DynamicPropertyRegistry registry) {
        kafkaProperties(registry, DB.url());
        registry.add("idem.redis.uri", REDIS::url);
        registry.add("idem.redis.prefix", () -> "spring-app");
        registry.add("management.endpoints.web.exposure.include", () -> "health,idem");
        registry.add("management.endpoints.jmx.exposure.include", () -> "idem");
    }

    @AfterAll
    static void stop() {
        DB.close();
        REDIS.close();
    }

    @Test
    void redisRestartLosesMarks_healthIsDown_untilTheNamespaceIsRearmed() {
        assertThat(leaseStore).isInstanceOf(RedisStore.class);
        String id = "pay-" + UUID.randomUUID();
        notifier.sendReceipt(id);
        assertThat(health.health().getStatus()).isEqualTo(Status.UP);

        REDIS.restart(); // no persistence: every mark and the namespace's sentinel are gone
        try {
            await().atMost(Duration.ofSeconds(20)) // once the client has reconnected, the claim finds the loss
                    .untilAsserted(() -> assertThatThrownBy(() -> notifier.sendReceipt(id))
                            .isInstanceOf(InProgressException.class)
                            .hasMessageContaining("marks lost"));
            assertThat(health.health().getStatus()).isEqualTo(Status.DOWN);
            assertThat(health.health().getDetails().get("marksLost")).asString().contains("receipts");
        } finally {
            rearmWhenReconnected();
        }
        assertThat(health.health().getStatus()).isEqualTo(Status.UP);
        assertThat(notifier.sendReceipt(id)).startsWith("receipt-"); // the lost mark counts as new now
    }

    @Test
    void redisUnreachable_healthIsDown() {
        REDIS.stop();
        try {
            assertThat(health.health().getStatus()).isEqualTo(Status.DOWN);
            assertThat(health.health().getDetails().get("stores")).asString().contains("unavailable");
        } finally {
            REDIS.start();
            rearmWhenReconnected();
        }
    }

    /** The operator's step after a loss: re-arm, once the client has reconnected to the restarted Redis. */
    private void rearmWhenReconnected() {
        await().atMost(Duration.ofSeconds(20)).ignoreExceptions().untilAsserted(() -> endpoint.rearm("receipts"));
    }

    @Test
    void outcomesAreCounted_byNamespaceAndOutcome() {
        String id = "pay-" + UUID.randomUUID();
        double before = count("receipts", "duplicate");
        notifier.sendReceipt(id);
        notifier.sendReceipt(id);
        assertThat(count("receipts", "duplicate") - before).isEqualTo(1.0);
        assertThat(endpoint.marksLost()).containsEntry("marksLost", Map.of());
    }

    private double count(String namespace, String outcome) {
        var timer = meters.find(MicrometerListener.HANDLINGS)
                .tags("namespace", namespace, "outcome", outcome)
                .timer();
        return timer == null ? 0 : timer.count();
    }
}
