package dev.idem.spring;

import io.micrometer.observation.ObservationConvention;
import io.micrometer.observation.ObservationRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * An {@code idem.handling} observation around each {@link Idempotent} call ({@link IdempotentObservations}) when the
 * application has an {@link ObservationRegistry} (Actuator, tracing). A bean {@code
 * ObservationConvention<IdempotentObservationContext>} renames it or changes its key values.
 */
@AutoConfiguration(
        afterName = "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration")
@ConditionalOnClass(ObservationRegistry.class)
@ConditionalOnBean(ObservationRegistry.class)
public class IdemObservationAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    IdempotentObservations idempotentObservations(
            ObservationRegistry registry,
            ObjectProvider<ObservationConvention<IdempotentObservationContext>> convention) {
        return new IdempotentObservations(registry, convention.getIfUnique());
    }
}
