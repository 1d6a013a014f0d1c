package dev.idem.spring;

import dev.idem.micrometer.MicrometerListener;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/** Idem's meters ({@link MicrometerListener}, docs/micrometer.md) when the application has a Micrometer registry. */
@AutoConfiguration(
        afterName = {
            "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
            "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
            "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration"
        })
@ConditionalOnClass({MicrometerListener.class, MeterRegistry.class})
@ConditionalOnBean(MeterRegistry.class)
public class IdemMetricsAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    MicrometerListener idemMicrometerListener(MeterRegistry registry) {
        return new MicrometerListener(registry);
    }
}
