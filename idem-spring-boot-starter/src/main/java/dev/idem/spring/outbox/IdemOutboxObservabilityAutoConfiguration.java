package dev.idem.spring.outbox;

import dev.idem.outbox.OutboxRelay;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The outbox backlog's gauges ({@link OutboxMeters}) and health ({@link OutboxHealthIndicator}), when the relay runs
 * in this application. After {@link IdemOutboxAutoConfiguration}, whose relay bean they need.
 */
@AutoConfiguration(
        after = IdemOutboxAutoConfiguration.class,
        afterName = {
            "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
            "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
            "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration"
        })
@ConditionalOnClass(OutboxRelay.class)
public class IdemOutboxObservabilityAutoConfiguration {

    /** The backlog's gauges. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(MeterRegistry.class)
    static class Metrics {
        @Bean
        @ConditionalOnBean({OutboxRelay.class, MeterRegistry.class})
        OutboxMeters idemOutboxMeters(OutboxRelay relay, IdemOutboxProperties properties, MeterRegistry registry) {
            return new OutboxMeters(relay, properties.getTable(), registry);
        }
    }

    /** The backlog in the health endpoint. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
    static class HealthContribution {
        @Bean
        @ConditionalOnBean(OutboxRelay.class)
        OutboxHealthIndicator idemOutboxHealthIndicator(OutboxRelay relay) {
            return new OutboxHealthIndicator(relay);
        }
    }
}
