package dev.idem.spring.kafka;

import dev.idem.IdempotencyListener;
import dev.idem.spring.IdemListeners;
import dev.idem.spring.IdemProperties;
import dev.idem.spring.internal.ListenerContainerChecks;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.config.AbstractKafkaListenerContainerFactory;
import org.springframework.kafka.core.KafkaOperations;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.ConsumerRecordRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;

/**
 * spring-kafka for {@code @Idempotent} listeners: {@link IdemKafka#errorHandler} with the {@code idem.kafka.*}
 * back-off, dead-lettering to {@code <topic>-dlt} with reason headers, as the error handler of Spring Boot's container
 * factory (it backs off when the application declares its own {@link CommonErrorHandler}), and of each container of a
 * guarded listener that has none (an application's own factory). Every container factory refuses to create a guarded
 * listener's container that would lose or strand records ({@link GuardedKafkaContainers}).
 */
@AutoConfiguration(beforeName = "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration")
@ConditionalOnClass(DefaultErrorHandler.class)
@EnableConfigurationProperties(IdemProperties.class)
public class IdemKafkaAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean(CommonErrorHandler.class)
    @ConditionalOnProperty(prefix = "idem.kafka", name = "error-handler", matchIfMissing = true)
    DefaultErrorHandler idemKafkaErrorHandler(
            IdemProperties properties,
            ObjectProvider<KafkaOperations<?, ?>> templates,
            ObjectProvider<IdempotencyListener> listeners) {
        IdemProperties.Kafka kafka = properties.getKafka();
        KafkaOperations<?, ?> template = templates.getIfUnique();
        ConsumerRecordRecoverer recoverer =
                kafka.isDeadLetter() && template != null ? IdemKafka.deadLetters(template) : IdemKafka.keepRetrying();
        return IdemKafka.errorHandler(
                recoverer,
                kafka.retryPolicy(),
                new IdemListeners(listeners.orderedStream().toList()));
    }

    @Bean
    static BeanPostProcessor idemKafkaGuardedContainers(ObjectProvider<CommonErrorHandler> handlers) {
        return new BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String beanName) {
                if (bean instanceof AbstractKafkaListenerContainerFactory<?, ?, ?>) {
                    return ListenerContainerChecks.around(
                            bean,
                            new GuardedKafkaContainers(beanName, handlers::getIfUnique),
                            "the error handler and acknowledge mode of the @Idempotent @KafkaListeners");
                }
                return bean;
            }
        };
    }
}
