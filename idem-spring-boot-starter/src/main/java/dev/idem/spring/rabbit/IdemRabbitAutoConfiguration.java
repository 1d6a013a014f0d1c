package dev.idem.spring.rabbit;

import dev.idem.IdempotencyListener;
import dev.idem.rabbitmq.DeliveryProcessor;
import dev.idem.spring.IdemListeners;
import dev.idem.spring.IdemProperties;
import java.util.ArrayList;
import java.util.List;
import org.aopalliance.aop.Advice;
import org.springframework.amqp.rabbit.config.BaseRabbitListenerContainerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * {@code @RabbitListener} + {@code @Idempotent}: {@link IdemRabbitAdvice} first in the advice chain of every Rabbit
 * listener container factory (Spring Boot's, and the application's own), with the {@code idem.rabbit.*} back-off; each
 * factory refuses to create a guarded listener's container in another acknowledge mode than AUTO ({@link
 * GuardedListenerAckMode}).
 */
@AutoConfiguration
@ConditionalOnClass({BaseRabbitListenerContainerFactory.class, DeliveryProcessor.class})
@ConditionalOnProperty(prefix = "idem.rabbit", name = "advice", matchIfMissing = true)
@EnableConfigurationProperties(IdemProperties.class)
public class IdemRabbitAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    IdemRabbitAdvice idemRabbitAdvice(IdemProperties properties, ObjectProvider<IdempotencyListener> listeners) {
        IdemProperties.Rabbit rabbit = properties.getRabbit();
        return new IdemRabbitAdvice(
                rabbit.retryPolicy(),
                rabbit.getConfirmTimeout(),
                new IdemListeners(listeners.orderedStream().toList()));
    }

    @Bean
    static BeanPostProcessor idemRabbitAdviceFirst(ObjectProvider<IdemRabbitAdvice> advice) {
        return new BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                if (bean instanceof BaseRabbitListenerContainerFactory<?> factory) {
                    List<Advice> chain = new ArrayList<>();
                    chain.add(advice.getObject());
                    Advice[] existing = factory.getAdviceChain();
                    if (existing != null) {
                        chain.addAll(List.of(existing));
                    }
                    factory.setAdviceChain(chain.toArray(Advice[]::new));
                    return GuardedListenerAckMode.around(factory);
                }
                return bean;
            }
        };
    }
}
