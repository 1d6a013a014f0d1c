package dev.idem.spring.rocketmq;

import dev.idem.ConfigurationException;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.rocketmq.DelayLevels;
import dev.idem.rocketmq.IdempotentRocketMQ;
import dev.idem.rocketmq.KeyExtractor;
import dev.idem.rocketmq.MessageHandler;
import dev.idem.spring.SpringFailures;
import dev.idem.spring.internal.ListenerContainerChecks;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.Objects;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.spring.annotation.ConsumeMode;
import org.apache.rocketmq.spring.annotation.RocketMQMessageListener;
import org.apache.rocketmq.spring.support.DefaultRocketMQListenerContainer;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Replaces the message handling of every rocketmq-spring listener container whose listener's {@code onMessage} is
 * {@code @Idempotent} with idem-rocketmq's guarded listener (concurrent or orderly, as the container consumes), after
 * the container made its consumer and before it starts it. The container still converts each message and calls the
 * listener; what the listener throws is settled by {@link SpringFailures#decision}: retried with the back-off (counted
 * or, for {@code IN_PROGRESS} and an unreachable database, uncounted), dead-lettered to {@code %DLQ%<group>} with the
 * reason, never by RocketMQ's {@code maxReconsumeTimes}. Containers of other listeners are left as they are.
 */
final class GuardedRocketMQContainers implements BeanPostProcessor {
    /**
     * The events' label of a message: the {@code @Idempotent} method reads the idempotency key itself (from its SpEL),
     * so the listener only needs a name for the message in its events and logs.
     */
    private static final KeyExtractor MESSAGE_ID = new KeyExtractor() {
        @Override
        public String extract(MessageExt message) {
            return message.getMsgId();
        }

        @Override
        public String describe() {
            return "the message id (the @Idempotent method reads the key)";
        }
    };

    private static final long ANNOTATION_AWAIT_TERMINATION_MILLIS = ((Number)
                    Objects.requireNonNull(AnnotationUtils.getDefaultValue(
                            RocketMQMessageListener.class, "awaitTerminationMillisWhenShutdown")))
            .longValue();

    private final RetryPolicy retryPolicy;
    private final DelayLevels delayLevels;
    private final IdempotencyListener listener;

    GuardedRocketMQContainers(RetryPolicy retryPolicy, DelayLevels delayLevels, IdempotencyListener listener) {
        this.retryPolicy = retryPolicy;
        this.delayLevels = delayLevels;
        this.listener = listener;
    }

    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) {
        if (bean instanceof DefaultRocketMQListenerContainer container && guarded(container)) {
            guard(container);
        }
        return bean;
    }

    private void guard(DefaultRocketMQListenerContainer container) {
        Method handleMessage = handleMessage(container.getClass());
        DefaultMQPushConsumer consumer = container.getConsumer();
        // The annotation's defaults ("") mean no namespace.
        if (consumer.getNamespace() != null && consumer.getNamespace().isEmpty()) {
            consumer.setNamespace(null);
        }
        if (consumer.getNamespaceV2() != null && consumer.getNamespaceV2().isEmpty()) {
            consumer.setNamespaceV2(null);
        }
        // The annotation's default would interrupt every handler still running a second into the shutdown: left unset
        // (0), idem-rocketmq gives handlers its own bound to end.
        if (consumer.getAwaitTerminationMillisWhenShutdown() == ANNOTATION_AWAIT_TERMINATION_MILLIS) {
            consumer.setAwaitTerminationMillisWhenShutdown(0);
        }
        IdempotentRocketMQ idem;
        try {
            idem = IdempotentRocketMQ.builder(consumer)
                    .retryPolicy(retryPolicy)
                    .delayLevels(delayLevels)
                    .classifier(SpringFailures.classifier())
                    .listener(listener)
                    .keyFrom(MESSAGE_ID)
                    .handler(handlerOf(container, handleMessage))
                    .build();
        } catch (ConfigurationException e) {
            throw new ConfigurationException(
                    "@RocketMQMessageListener " + container.getConsumerGroup() + " (" + container.getTopic()
                            + ") is @Idempotent: " + e.getMessage() + " (in Spring: leave the annotation's"
                            + " maxReconsumeTimes and namespace unset; the bound is idem.rocketmq.max-attempts)",
                    e);
        }
        if (container.getConsumeMode() == ConsumeMode.ORDERLY) {
            consumer.registerMessageListener(idem.orderly());
        } else {
            consumer.registerMessageListener(idem.concurrently());
        }
    }

    /** The container's own conversion and call of its listener, whose exceptions reach the guarded listener. */
    private static MessageHandler handlerOf(DefaultRocketMQListenerContainer container, Method handleMessage) {
        return (key, message) -> {
            try {
                handleMessage.invoke(container, message);
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                if (cause instanceof Exception exception) {
                    throw exception;
                }
                throw (Error) cause;
            }
            return Outcome.processed("the listener returned");
        };
    }

    /** Whether the container's listener has an {@code onMessage} method that is {@code @Idempotent}. */
    static boolean guarded(DefaultRocketMQListenerContainer container) {
        Object listener = container.getRocketMQListener() != null
                ? container.getRocketMQListener()
                : container.getRocketMQReplyListener();
        if (listener == null) {
            return false;
        }
        return Arrays.stream(AopUtils.getTargetClass(listener).getMethods())
                .filter(m -> m.getName().equals("onMessage") && m.getParameterCount() == 1 && !m.isBridge())
                .anyMatch(m -> ListenerContainerChecks.guarded(m, listener));
    }

    /**
     * The container's private {@code handleMessage(MessageExt)}, looked up when a guarded container is met, so that a
     * rocketmq-spring without it fails that container's start with the fix, and leaves applications without an
     * {@code @Idempotent} listener alone.
     *
     * @throws ConfigurationException if {@code containerClass} has no such method
     */
    static Method handleMessage(Class<?> containerClass) {
        @Nullable Method method = ReflectionUtils.findMethod(containerClass, "handleMessage", MessageExt.class);
        if (method == null) {
            throw new ConfigurationException("this rocketmq-spring's " + containerClass.getName() + " has no"
                    + " handleMessage(MessageExt), which Idem calls to convert and hand a message to an @Idempotent"
                    + " listener: use rocketmq-spring-boot-starter 2.3.x, or set idem.rocketmq.listener=false");
        }
        ReflectionUtils.makeAccessible(method);
        return method;
    }
}
