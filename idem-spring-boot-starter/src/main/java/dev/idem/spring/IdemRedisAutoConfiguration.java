package dev.idem.spring;

import dev.idem.ConfigurationException;
import dev.idem.IdempotencyListener;
import dev.idem.redis.RedisStore;
import dev.idem.spi.IdempotencyStore;
import io.lettuce.core.RedisClient;
import java.util.Objects;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The Redis lease store, when idem-redis is on the classpath: from {@code idem.redis.uri}, else on the application's
 * own Lettuce client (Spring Data Redis, standalone or Sentinel).
 */
@AutoConfiguration(afterName = "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration")
@ConditionalOnClass(RedisStore.class)
@EnableConfigurationProperties(IdemProperties.class)
public class IdemRedisAutoConfiguration {

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnProperty(prefix = "idem.redis", name = "uri")
    static class FromUri {
        @Bean(destroyMethod = "close")
        @ConditionalOnMissingBean(IdempotencyStore.class)
        RedisStore idemRedisStore(IdemProperties properties, ObjectProvider<IdempotencyListener> listeners) {
            return RedisStore.builder(
                            Objects.requireNonNull(properties.getRedis().getUri(), "idem.redis.uri"))
                    .prefix(properties.getRedis().getPrefix())
                    .listener(new IdemListeners(listeners.orderedStream().toList()))
                    .build();
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnExpression("'${idem.redis.uri:}'.isEmpty()")
    @ConditionalOnClass(LettuceConnectionFactory.class)
    @ConditionalOnBean(LettuceConnectionFactory.class)
    static class FromApplicationConnection {
        @Bean(destroyMethod = "close")
        @ConditionalOnMissingBean(IdempotencyStore.class)
        RedisStore idemRedisStore(
                LettuceConnectionFactory factory,
                IdemProperties properties,
                ObjectProvider<IdempotencyListener> listeners) {
            if (!(factory.getNativeClient() instanceof RedisClient client)) {
                throw new ConfigurationException("the application's Redis connection is not a standalone or"
                        + " Sentinel Lettuce client (" + factory.getNativeClient() + "): set idem.redis.uri");
            }
            return RedisStore.builder(client)
                    .prefix(properties.getRedis().getPrefix())
                    .listener(new IdemListeners(listeners.orderedStream().toList()))
                    .build();
        }
    }
}
