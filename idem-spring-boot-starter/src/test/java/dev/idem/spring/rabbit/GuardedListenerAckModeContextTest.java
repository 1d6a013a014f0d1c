package dev.idem.spring.rabbit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.ConfigurationException;
import dev.idem.spring.Idempotent;
import dev.idem.spring.IdempotentBatch;
import java.util.List;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.annotation.RabbitListenerConfigurer;
import org.springframework.amqp.rabbit.config.ContainerCustomizer;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.listener.MethodRabbitListenerEndpoint;
import org.springframework.amqp.rabbit.listener.RabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistrar;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.api.RabbitListenerErrorHandler;
import org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.messaging.handler.annotation.support.DefaultMessageHandlerMethodFactory;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;

/**
 * The acknowledge-mode check in whole applications (Spring Boot's Rabbit auto-configuration and the starter's), on the
 * ways a listener gets its mode and its container: placeholders and SpEL, the direct container, the application's own
 * factory types, proxied listener beans, batch listeners, programmatic and late endpoints. No broker: containers are
 * created but never started.
 */
class GuardedListenerAckModeContextTest {
    private final ApplicationContextRunner app = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(RabbitAutoConfiguration.class, IdemRabbitAutoConfiguration.class))
            .withPropertyValues(
                    "spring.rabbitmq.listener.simple.auto-startup=false",
                    "spring.rabbitmq.listener.direct.auto-startup=false");

    static class PlaceholderMode {
        @RabbitListener(queues = "q", ackMode = "${test.ack-mode}")
        @Idempotent(namespace = "n", key = "#message.messageProperties.messageId")
        public void on(Message message) {}
    }

    static class SpelMode {
        @RabbitListener(queues = "q", ackMode = "#{'MAN' + 'UAL'}")
        @Idempotent(namespace = "n", key = "#message.messageProperties.messageId")
        public void on(Message message) {}
    }

    static class Guarded {
        @RabbitListener(queues = "q")
        @Idempotent(namespace = "n", key = "#message.messageProperties.messageId")
        public void on(Message message) {}
    }

    static class GuardedBatch {
        @RabbitListener(queues = "q", batch = "true")
        @IdempotentBatch(namespace = "n", key = "#element.messageProperties.messageId")
        public void on(List<Message> messages) {}
    }

    static class GuardedWithItsOwnErrorHandler {
        @RabbitListener(queues = "q", errorHandler = "swallowing")
        @Idempotent(namespace = "n", key = "#message.messageProperties.messageId")
        public void on(Message message) {}
    }

    /**
     * A listener-level error handler is handed the guard's InProgressException before the advice; one that returns has
     * the container ack the message unapplied.
     */
    @Test
    void guardedListener_withItsOwnErrorHandler_isRefused_namingTheFix() {
        app.withBean(GuardedWithItsOwnErrorHandler.class)
                .withBean("swallowing", RabbitListenerErrorHandler.class, () -> (amqp, channel, message, e) -> null)
                .run(context -> assertThat(configurationFailure(context.getStartupFailure()))
                        .hasMessageContaining(GuardedWithItsOwnErrorHandler.class.getName() + ".on")
                        .hasMessageContaining("'swallowing'")
                        .hasMessageContaining("Remove errorHandler"));
    }

    /**
     * The advice publishes the retry or dead-letter copy with confirms, which a transacted channel refuses (and closes):
     * every failed delivery would go back to the queue at once, again and again, and never be dead-lettered.
     */
    @Test
    void guardedListener_onATransactedChannel_isRefused_namingTheFix() {
        app.withBean(Guarded.class)
                .withBean(ContainerCustomizer.class, () ->
                        (ContainerCustomizer<SimpleMessageListenerContainer>) c -> c.setChannelTransacted(true))
                .run(context -> assertThat(configurationFailure(context.getStartupFailure()))
                        .hasMessageContaining(Guarded.class.getName() + ".on")
                        .hasMessageContaining("transacted")
                        .hasMessageContaining("setChannelTransacted(false)"));
    }

    /**
     * A ContainerCustomizer that sets the container's advice chain replaces the factory's, Idem's advice with it: every
     * failure would be requeued at once by spring-rabbit, a rejected message forever.
     */
    @Test
    void containerCustomizer_replacingTheAdviceChain_isRefused_namingTheFix() {
        app.withBean(Guarded.class)
                .withBean(ContainerCustomizer.class, () -> (ContainerCustomizer<SimpleMessageListenerContainer>)
                        c -> c.setAdviceChain((MethodInterceptor) MethodInvocation::proceed))
                .run(context -> assertThat(configurationFailure(context.getStartupFailure()))
                        .hasMessageContaining(Guarded.class.getName() + ".on")
                        .hasMessageContaining("IdemRabbitAdvice"));
        app.withBean(Guarded.class)
                .withBean(ContainerCustomizer.class, () ->
                        (ContainerCustomizer<SimpleMessageListenerContainer>) c -> c.setPrefetchCount(7))
                .run(context -> assertThat(context).hasNotFailed());
    }

    @Test
    void ackModeFromAPlaceholder_isTheModeChecked() {
        app.withBean(PlaceholderMode.class)
                .withPropertyValues("test.ack-mode=MANUAL")
                .run(context -> assertRefused(context.getStartupFailure(), "MANUAL"));
        app.withBean(PlaceholderMode.class)
                .withPropertyValues("test.ack-mode=AUTO", "spring.rabbitmq.listener.simple.acknowledge-mode=manual")
                .run(context -> assertThat(context).hasNotFailed());
    }

    @Test
    void ackModeFromSpel_isTheModeChecked() {
        app.withBean(SpelMode.class).run(context -> assertRefused(context.getStartupFailure(), "MANUAL"));
    }

    @Test
    void directContainer_inManual_isRefused() {
        app.withBean(Guarded.class)
                .withPropertyValues(
                        "spring.rabbitmq.listener.type=direct",
                        "spring.rabbitmq.listener.direct.acknowledge-mode=manual")
                .run(context -> assertThat(refusal(context.getStartupFailure(), "MANUAL"))
                        .hasMessageContaining("spring.rabbitmq.listener.direct.acknowledge-mode=auto"));
    }

    @Test
    void ackModeSetByAContainerCustomizer_isTheModeChecked() {
        app.withBean(Guarded.class)
                .withBean(ContainerCustomizer.class, () -> (ContainerCustomizer<SimpleMessageListenerContainer>)
                        c -> c.setAcknowledgeMode(AcknowledgeMode.NONE))
                .run(context -> assertRefused(context.getStartupFailure(), "NONE"));
    }

    @Test
    void batchListener_withIdempotentBatch_isRefused_inEveryMode() {
        for (String mode : List.of("auto", "manual")) {
            app.withBean(GuardedBatch.class)
                    .withPropertyValues("spring.rabbitmq.listener.simple.acknowledge-mode=" + mode)
                    .run(context -> assertThat(configurationFailure(context.getStartupFailure()))
                            .hasMessageStartingWith("@IdempotentBatch on ")
                            .hasMessageContaining("returns the whole batch to the queue")
                            .hasMessageContaining("@Idempotent"));
        }
    }

    @Test
    void adviceOff_checksNothing() {
        app.withBean(Guarded.class)
                .withPropertyValues(
                        "idem.rabbit.advice=false", "spring.rabbitmq.listener.simple.acknowledge-mode=manual")
                .run(context -> assertThat(context).hasNotFailed());
    }

    /** The application's own factory type, injected by its class and called from another {@code @Bean} method. */
    static class OwnFactory extends SimpleRabbitListenerContainerFactory {
        String label() {
            return "own";
        }
    }

    record FactoryUser(OwnFactory factory) {}

    @Configuration
    static class OwnFactoryConfig {
        @Bean
        OwnFactory rabbitListenerContainerFactory(ConnectionFactory connections) {
            OwnFactory factory = new OwnFactory();
            factory.setConnectionFactory(connections);
            factory.setAutoStartup(false);
            factory.setAcknowledgeMode(AcknowledgeMode.MANUAL);
            return factory;
        }

        @Bean
        FactoryUser factoryUser() {
            return new FactoryUser(rabbitListenerContainerFactory(null));
        }
    }

    @Test
    void ownFactoryType_isInjectedByItsClass_andStillChecks() {
        app.withUserConfiguration(OwnFactoryConfig.class).run(context -> {
            assertThat(context).hasNotFailed();
            OwnFactory factory = context.getBean(OwnFactory.class);
            assertThat(context.getBean(FactoryUser.class).factory()).isSameAs(factory);
            assertThat(factory.label()).isEqualTo("own");
            assertThat(factory.getAdviceChain()).hasAtLeastOneElementOfType(IdemRabbitAdvice.class);
        });
        app.withUserConfiguration(OwnFactoryConfig.class)
                .withBean(Guarded.class)
                .run(context -> assertRefused(context.getStartupFailure(), "MANUAL"));
    }

    /** Kotlin's classes are final unless opened; Java's can be too. */
    static final class FinalFactory extends SimpleRabbitListenerContainerFactory {}

    @Configuration
    static class FinalFactoryConfig {
        @Bean
        FinalFactory rabbitListenerContainerFactory(ConnectionFactory connections) {
            FinalFactory factory = new FinalFactory();
            factory.setConnectionFactory(connections);
            factory.setAutoStartup(false);
            return factory;
        }
    }

    @Test
    void finalFactoryClass_stillStarts_withTheAdvice() {
        app.withUserConfiguration(FinalFactoryConfig.class)
                .withBean(Guarded.class)
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(FinalFactory.class).getAdviceChain())
                            .hasAtLeastOneElementOfType(IdemRabbitAdvice.class);
                });
    }

    /** A subclass whose own state is read through a final method. */
    static class FactoryWithFinalMethod extends SimpleRabbitListenerContainerFactory {
        private final String region;

        FactoryWithFinalMethod(String region) {
            this.region = region;
        }

        final String region() {
            return region;
        }
    }

    @Configuration
    static class FinalMethodConfig {
        @Bean
        FactoryWithFinalMethod rabbitListenerContainerFactory(ConnectionFactory connections) {
            FactoryWithFinalMethod factory = new FactoryWithFinalMethod("eu");
            factory.setConnectionFactory(connections);
            factory.setAutoStartup(false);
            return factory;
        }
    }

    @Test
    void factoryWithAFinalMethod_answersThatMethodWithItsOwnState() {
        app.withUserConfiguration(FinalMethodConfig.class)
                .withBean(Guarded.class)
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(FactoryWithFinalMethod.class).region())
                            .isEqualTo("eu");
                });
    }

    public interface PaymentHandler {
        @RabbitListener(queues = "q")
        void on(Message message);
    }

    public static class TransactionalPayments implements PaymentHandler {
        @Override
        @Transactional
        @Idempotent(namespace = "n", key = "#message.messageProperties.messageId")
        public void on(Message message) {}
    }

    @Configuration
    @EnableTransactionManagement
    static class Transactions {
        @Bean
        DataSourceTransactionManager transactionManager() {
            return new DataSourceTransactionManager(new DriverManagerDataSource("jdbc:postgresql://127.0.0.1/test"));
        }
    }

    @Test
    void proxiedListenerBeans_inManual_areRefused() {
        for (String targetClass : List.of("true", "false")) {
            app.withUserConfiguration(Transactions.class)
                    .withBean(TransactionalPayments.class)
                    .withPropertyValues(
                            "spring.aop.proxy-target-class=" + targetClass,
                            "spring.rabbitmq.listener.simple.acknowledge-mode=manual")
                    .run(context -> assertRefused(context.getStartupFailure(), "MANUAL"));
        }
    }

    /** An endpoint the application registers itself. */
    @Configuration
    static class ProgrammaticEndpoint implements RabbitListenerConfigurer {
        @Override
        public void configureRabbitListeners(RabbitListenerEndpointRegistrar registrar) {
            registrar.registerEndpoint(endpoint());
        }
    }

    @Test
    void programmaticMethodEndpoint_inManual_isRefused() {
        app.withUserConfiguration(ProgrammaticEndpoint.class)
                .withPropertyValues("spring.rabbitmq.listener.simple.acknowledge-mode=manual")
                .run(context -> assertRefused(context.getStartupFailure(), "MANUAL"));
    }

    @Test
    void endpointRegisteredAfterTheStartup_inManual_isRefused() {
        app.withPropertyValues("spring.rabbitmq.listener.simple.acknowledge-mode=manual")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    RabbitListenerEndpointRegistry registry = context.getBean(RabbitListenerEndpointRegistry.class);
                    RabbitListenerContainerFactory<?> factory =
                            context.getBean("rabbitListenerContainerFactory", RabbitListenerContainerFactory.class);
                    assertThatThrownBy(() -> registry.registerListenerContainer(endpoint(), factory, false))
                            .isInstanceOf(ConfigurationException.class)
                            .hasMessageContaining("acks in mode MANUAL");
                    assertThat(registry.getListenerContainers()).isEmpty();
                });
    }

    private static MethodRabbitListenerEndpoint endpoint() {
        MethodRabbitListenerEndpoint endpoint = new MethodRabbitListenerEndpoint();
        try {
            endpoint.setBean(new Guarded());
            endpoint.setMethod(Guarded.class.getMethod("on", Message.class));
        } catch (NoSuchMethodException e) {
            throw new AssertionError(e);
        }
        DefaultMessageHandlerMethodFactory handlers = new DefaultMessageHandlerMethodFactory();
        handlers.afterPropertiesSet();
        endpoint.setMessageHandlerMethodFactory(handlers);
        endpoint.setId("programmatic");
        endpoint.setQueueNames("q");
        return endpoint;
    }

    private static void assertRefused(@Nullable Throwable failure, String mode) {
        refusal(failure, mode);
    }

    private static Throwable refusal(@Nullable Throwable failure, String mode) {
        Throwable t = configurationFailure(failure);
        assertThat(t).hasMessageContaining("acks in mode " + mode);
        return t;
    }

    private static Throwable configurationFailure(@Nullable Throwable failure) {
        assertThat(failure).as("the startup failed").isNotNull();
        Throwable t = failure;
        while (t != null && !(t instanceof ConfigurationException)) {
            t = t.getCause();
        }
        assertThat(t).as("a ConfigurationException in %s", failure).isNotNull();
        return t;
    }
}
