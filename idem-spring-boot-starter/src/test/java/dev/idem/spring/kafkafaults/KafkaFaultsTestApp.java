package dev.idem.spring.kafkafaults;

import dev.idem.spring.rabbitfaults.HandledOutcomes;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.core.ConsumerFactory;

/**
 * Guarded Kafka listeners under faults: one on the application's own container factory (built without Spring Boot's
 * configurer, so without an error handler), one whose database ends every session while the method runs.
 */
@SpringBootApplication
public class KafkaFaultsTestApp {
    @Bean
    HandledOutcomes handledOutcomes() {
        return new HandledOutcomes();
    }

    @Bean
    ConcurrentKafkaListenerContainerFactory<Object, Object> ownFactory(ConsumerFactory<Object, Object> consumers) {
        ConcurrentKafkaListenerContainerFactory<Object, Object> factory =
                new ConcurrentKafkaListenerContainerFactory<>();
        factory.setConsumerFactory(consumers);
        return factory;
    }
}
