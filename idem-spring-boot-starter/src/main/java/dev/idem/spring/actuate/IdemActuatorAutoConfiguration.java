package dev.idem.spring.actuate;

import dev.idem.redis.RedisStore;
import dev.idem.spi.IdempotencyStore;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The health indicator {@code idem} and the endpoint {@code idem} (re-arm a Redis namespace). */
@AutoConfiguration(afterName = {"dev.idem.spring.IdemAutoConfiguration", "dev.idem.spring.IdemRedisAutoConfiguration"})
public class IdemActuatorAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    MarksLostTracker idemMarksLostTracker() {
        return new MarksLostTracker();
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(HealthIndicator.class)
    @ConditionalOnEnabledHealthIndicator("idem")
    static class HealthConfiguration {
        @Bean
        @ConditionalOnMissingBean(name = "idemHealthIndicator")
        IdemHealthIndicator idemHealthIndicator(ObjectProvider<IdempotencyStore> stores, MarksLostTracker marksLost) {
            return new IdemHealthIndicator(stores.orderedStream().toList(), marksLost);
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass({RedisStore.class, org.springframework.boot.actuate.endpoint.annotation.Endpoint.class})
    @ConditionalOnBean(RedisStore.class)
    @ConditionalOnAvailableEndpoint(IdemEndpoint.class)
    static class EndpointConfiguration {
        @Bean
        @ConditionalOnMissingBean
        IdemEndpoint idemEndpoint(RedisStore store, MarksLostTracker marksLost) {
            return new IdemEndpoint(store, marksLost);
        }
    }
}
