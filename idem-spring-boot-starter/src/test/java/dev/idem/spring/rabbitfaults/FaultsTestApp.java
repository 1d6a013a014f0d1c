package dev.idem.spring.rabbitfaults;

import org.springframework.amqp.rabbit.config.ContainerCustomizer;
import org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/**
 * Guarded listeners that fail in the ways a listener can: an {@link Error}, a failure after the commit, a payload
 * that cannot be converted to the method's parameter. spring-rabbit's default answer to an {@code Error} is {@code
 * System.exit(99)}; here it only stops the container, so that the test's JVM lives on. Every delivery is counted
 * before the listener runs.
 */
@SpringBootApplication
public class FaultsTestApp {
    @Bean
    HandledOutcomes handledOutcomes() {
        return new HandledOutcomes();
    }

    @Bean
    Deliveries deliveries() {
        return new Deliveries();
    }

    @Bean
    ContainerCustomizer<SimpleMessageListenerContainer> keepTheJvmOnError(Deliveries deliveries) {
        return container -> {
            container.setJavaLangErrorHandler(error -> {});
            container.addAfterReceivePostProcessors(deliveries);
        };
    }
}
