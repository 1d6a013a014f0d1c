package dev.idem.spring.kafka;

import dev.idem.IdempotencyListener;
import dev.idem.spring.IdemListeners;
import dev.idem.spring.IdemProperties;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.core.KafkaOperations;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.ConsumerRecordRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;

/**
 * The error handler of Spring Boot's Kafka listener containers, for {@code @Idempotent} listeners: {@link
 * IdemKafka#errorHandler} with the {@code idem.kafka.*} back-off, dead-lettering to {@code <topic>-dlt} with reason
 * headers. Backs off when the application declares its own {@link CommonErrorHandler}.
 */
@AutoConfiguration(beforeName = "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration")
@ConditionalOnClass(DefaultErrorHandler.class)
@ConditionalOnProperty(prefix = "idem.kafka", name = "error-handler", matchIfMissing = true)
@EnableConfigurationProperties(IdemProperties.class)
public class IdemKafkaAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean(CommonErrorHandler.class)
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
                kafka.getInProgressDelay(),
                new IdemListeners(listeners.orderedStream().toList()));
    }
}
