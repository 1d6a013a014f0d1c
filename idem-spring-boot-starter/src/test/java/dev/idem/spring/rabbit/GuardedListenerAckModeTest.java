package dev.idem.spring.rabbit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.ConfigurationException;
import dev.idem.RetryPolicy;
import dev.idem.spring.Idempotent;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.rabbit.annotation.RabbitHandler;
import org.springframework.amqp.rabbit.config.SimpleRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.MethodRabbitListenerEndpoint;
import org.springframework.amqp.rabbit.listener.MultiMethodRabbitListenerEndpoint;
import org.springframework.amqp.rabbit.listener.RabbitListenerContainerFactory;
import org.springframework.messaging.handler.annotation.support.DefaultMessageHandlerMethodFactory;

/**
 * The factory's check on the endpoints {@code RabbitListenerAnnotationBeanPostProcessor} makes: a class-level
 * {@code @RabbitListener} with an {@code @Idempotent} {@code @RabbitHandler}, and a method-level listener without a
 * guard (the application's {@code MANUAL} listeners stay as they are). No broker: a container is only created here.
 */
class GuardedListenerAckModeTest {

    /** A class-level listener: one guarded handler among others. */
    static class Payments {
        @RabbitHandler
        @Idempotent(namespace = "payments", key = "#payment")
        public void onPayment(String payment) {}

        @RabbitHandler
        public void onOther(byte[] other) {}
    }

    static class Notices {
        public void onNotice(String notice) {}
    }

    @Test
    void classLevelListener_withAnIdempotentHandler_inAManualFactory_isRefused() throws Exception {
        assertThatThrownBy(() -> factory(AcknowledgeMode.MANUAL).createListenerContainer(classLevel()))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining(Payments.class.getName() + ".onPayment")
                .hasMessageContaining("acks in mode MANUAL");
    }

    @Test
    void classLevelListener_withAnIdempotentHandler_andItsOwnAckModeAuto_getsItsContainer() throws Exception {
        MethodRabbitListenerEndpoint endpoint = classLevel();
        endpoint.setAckMode(AcknowledgeMode.AUTO);

        assertThat(factory(AcknowledgeMode.MANUAL).createListenerContainer(endpoint))
                .isInstanceOfSatisfying(
                        AbstractMessageListenerContainer.class,
                        c -> assertThat(c.getAcknowledgeMode()).isEqualTo(AcknowledgeMode.AUTO));
    }

    @Test
    void unguardedListener_inAManualFactory_getsItsContainer() throws Exception {
        MethodRabbitListenerEndpoint endpoint = endpoint(new MethodRabbitListenerEndpoint());
        endpoint.setBean(new Notices());
        endpoint.setMethod(Notices.class.getMethod("onNotice", String.class));

        assertThat(factory(AcknowledgeMode.MANUAL).createListenerContainer(endpoint))
                .isInstanceOfSatisfying(
                        AbstractMessageListenerContainer.class,
                        c -> assertThat(c.getAcknowledgeMode()).isEqualTo(AcknowledgeMode.MANUAL));
    }

    private static RabbitListenerContainerFactory<?> factory(AcknowledgeMode mode) {
        SimpleRabbitListenerContainerFactory factory = new SimpleRabbitListenerContainerFactory();
        factory.setAcknowledgeMode(mode);
        factory.setAdviceChain(new IdemRabbitAdvice(RetryPolicy.defaults(), Duration.ofSeconds(1), event -> {}));
        return (RabbitListenerContainerFactory<?>) GuardedListenerAckMode.around(factory);
    }

    private static MethodRabbitListenerEndpoint classLevel() throws Exception {
        List<Method> handlers = List.of(
                Payments.class.getMethod("onPayment", String.class), Payments.class.getMethod("onOther", byte[].class));
        return endpoint(new MultiMethodRabbitListenerEndpoint(handlers, null, new Payments()));
    }

    private static MethodRabbitListenerEndpoint endpoint(MethodRabbitListenerEndpoint endpoint) {
        DefaultMessageHandlerMethodFactory handlers = new DefaultMessageHandlerMethodFactory();
        handlers.afterPropertiesSet();
        endpoint.setMessageHandlerMethodFactory(handlers);
        endpoint.setId("test");
        endpoint.setQueueNames("q");
        return endpoint;
    }
}
