package dev.idem.spring.rocketmq;

import dev.idem.IdempotencyListener;
import dev.idem.rocketmq.DelayLevels;
import dev.idem.rocketmq.IdempotentRocketMQ;
import dev.idem.spring.IdemListeners;
import dev.idem.spring.IdemProperties;
import org.apache.rocketmq.spring.support.DefaultRocketMQListenerContainer;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * {@code @RocketMQMessageListener} + {@code @Idempotent}: every rocketmq-spring listener container of an {@code
 * Idempotent} listener consumes through idem-rocketmq's guarded listener with the {@code idem.rocketmq.*} back-off
 * ({@link GuardedRocketMQContainers}).
 */
@AutoConfiguration
@ConditionalOnClass({DefaultRocketMQListenerContainer.class, IdempotentRocketMQ.class})
@ConditionalOnProperty(prefix = "idem.rocketmq", name = "listener", matchIfMissing = true)
@EnableConfigurationProperties(IdemProperties.class)
public class IdemRocketMQAutoConfiguration {

    @Bean
    static BeanPostProcessor idemRocketMQContainers(
            ObjectProvider<IdemProperties> properties, ObjectProvider<IdempotencyListener> listeners) {
        return new LazyGuard(properties, listeners);
    }

    /** Reads the properties and listeners when the first container is made, not when post-processors are. */
    private static final class LazyGuard implements BeanPostProcessor {
        private final ObjectProvider<IdemProperties> properties;
        private final ObjectProvider<IdempotencyListener> listeners;
        private volatile @Nullable GuardedRocketMQContainers guard;

        LazyGuard(ObjectProvider<IdemProperties> properties, ObjectProvider<IdempotencyListener> listeners) {
            this.properties = properties;
            this.listeners = listeners;
        }

        @Override
        public Object postProcessAfterInitialization(Object bean, String beanName) {
            if (!(bean instanceof DefaultRocketMQListenerContainer)) {
                return bean;
            }
            GuardedRocketMQContainers g = guard;
            if (g == null) {
                IdemProperties.RocketMQ rocketmq = properties.getObject().getRocketmq();
                g = new GuardedRocketMQContainers(
                        rocketmq.retryPolicy(),
                        DelayLevels.parse(rocketmq.getDelayLevels()),
                        new IdemListeners(listeners.orderedStream().toList()));
                guard = g;
            }
            return g.postProcessAfterInitialization(bean, beanName);
        }
    }
}
