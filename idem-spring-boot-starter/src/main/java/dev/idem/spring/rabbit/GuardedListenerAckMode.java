package dev.idem.spring.rabbit;

import dev.idem.ConfigurationException;
import dev.idem.spring.Idempotent;
import dev.idem.spring.IdempotentBatch;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.rabbit.annotation.RabbitHandler;
import org.springframework.amqp.rabbit.config.BaseRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.DirectMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.MethodRabbitListenerEndpoint;
import org.springframework.amqp.rabbit.listener.MultiMethodRabbitListenerEndpoint;
import org.springframework.aop.framework.AopConfigException;
import org.springframework.aop.framework.ProxyFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.aop.support.NameMatchMethodPointcutAdvisor;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Fails the startup when a container factory creates the container of an {@link Idempotent} {@code @RabbitListener}
 * in another acknowledge mode than {@link AcknowledgeMode#AUTO}, with the mode the container really has (the
 * factory's, or the listener's own {@code ackMode}), or the container of an {@link IdempotentBatch} one in any mode.
 *
 * <p>The guard and {@link IdemRabbitAdvice} settle what they decide (a duplicate the method never sees, a retry copy, a
 * dead letter) by returning to the container, which acks. In {@code MANUAL} nothing acks those deliveries: each holds
 * a prefetch slot until its channel closes and then comes back, again and again. In {@code NONE} the broker forgets a
 * delivery as it sends it, so a crash inside the method loses the message.
 */
final class GuardedListenerAckMode implements MethodInterceptor {

    private static final System.Logger LOG = System.getLogger(GuardedListenerAckMode.class.getName());

    /**
     * {@code factory}, checking every container it creates for an endpoint; or {@code factory} itself, unchecked and
     * with a warning, when a subclass of it cannot stand in for it: its class is final or not visible, or it has a
     * final method (called on the proxy, that method would read the proxy's own empty fields).
     */
    static Object around(BaseRabbitListenerContainerFactory<?> factory) {
        Class<?> type = factory.getClass();
        String unproxyable = finalMethodOf(type);
        if (unproxyable == null) {
            ProxyFactory proxy = new ProxyFactory(factory);
            proxy.setProxyTargetClass(true);
            NameMatchMethodPointcutAdvisor advisor = new NameMatchMethodPointcutAdvisor(new GuardedListenerAckMode());
            advisor.setMappedName("createListenerContainer");
            proxy.addAdvisor(advisor);
            try {
                return proxy.getProxy(type.getClassLoader());
            } catch (AopConfigException e) {
                unproxyable = e.getMessage();
            }
        }
        LOG.log(
                System.Logger.Level.WARNING,
                "the acknowledge mode of the @Idempotent @RabbitListeners of container factory {0} is not checked (a"
                        + " guarded listener needs AUTO): {1}",
                type.getName(),
                unproxyable);
        return factory;
    }

    private static @Nullable String finalMethodOf(Class<?> type) {
        for (Class<?> c = type; c != null && c != Object.class; c = c.getSuperclass()) {
            for (Method m : c.getDeclaredMethods()) {
                int modifiers = m.getModifiers();
                if (Modifier.isFinal(modifiers) && !Modifier.isStatic(modifiers) && !Modifier.isPrivate(modifiers)) {
                    return "its method " + m + " is final";
                }
            }
        }
        return null;
    }

    @Override
    public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
        Object container = invocation.proceed();
        Object[] arguments = invocation.getArguments();
        if (arguments.length == 1
                && arguments[0] instanceof MethodRabbitListenerEndpoint endpoint
                && container instanceof AbstractMessageListenerContainer c) {
            List<Method> guarded = guardedMethods(endpoint);
            for (Method m : guarded) {
                if (AnnotatedElementUtils.hasAnnotation(m, IdempotentBatch.class)) {
                    throw batchRefusal(m);
                }
            }
            if (!guarded.isEmpty() && c.getAcknowledgeMode() != AcknowledgeMode.AUTO) {
                throw refusal(guarded.get(0), c);
            }
        }
        return container;
    }

    /**
     * The advice settles single deliveries only: a batch with an element that is rejected or keeps failing would go
     * back to the queue whole, at once and forever.
     */
    private static ConfigurationException batchRefusal(Method method) {
        return new ConfigurationException("@IdempotentBatch on "
                + method.getDeclaringClass().getName() + "."
                + method.getName() + " is a spring-rabbit batch listener, which Idem does not guard yet: when one"
                + " element is rejected or keeps failing, spring-rabbit returns the whole batch to the queue at once,"
                + " again and again, and the element is never dead-lettered. Guard the listener per message: a"
                + " @RabbitListener without batch = \"true\" whose method takes one message and is @Idempotent");
    }

    private static List<Method> guardedMethods(MethodRabbitListenerEndpoint endpoint) {
        Object bean = endpoint.getBean();
        Class<?> type = AopUtils.getTargetClass(bean);
        List<Method> methods = new ArrayList<>();
        if (endpoint instanceof MultiMethodRabbitListenerEndpoint) { // a class-level @RabbitListener
            ReflectionUtils.doWithMethods(
                    type, methods::add, m -> AnnotatedElementUtils.hasAnnotation(m, RabbitHandler.class));
        } else {
            Method method = endpoint.getMethod();
            if (method != null) {
                methods.add(AopUtils.getMostSpecificMethod(method, type));
            }
        }
        methods.removeIf(m -> !AnnotatedElementUtils.hasAnnotation(m, Idempotent.class)
                && !AnnotatedElementUtils.hasAnnotation(m, IdempotentBatch.class));
        return methods;
    }

    private static ConfigurationException refusal(Method method, AbstractMessageListenerContainer container) {
        AcknowledgeMode mode = container.getAcknowledgeMode();
        String type = container instanceof DirectMessageListenerContainer ? "direct" : "simple";
        String why = mode == AcknowledgeMode.NONE
                ? "the broker forgets each delivery as it sends it, so a crash inside the method loses the message"
                : "a duplicate the guard skips, or a delivery it sends to the retry queue or the dead-letter queue,"
                        + " is never acked: it holds a prefetch slot until the channel closes, then is delivered again";
        return new ConfigurationException(
                "@Idempotent on " + method.getDeclaringClass().getName() + "."
                        + method.getName() + " is a @RabbitListener whose container acks in mode " + mode + ": " + why
                        + ". Idem needs AUTO, where the container acks after the method (and its transaction) returned and"
                        + " Idem settles duplicates, retries and dead letters. Set ackMode = \"AUTO\" on this @RabbitListener"
                        + " (or acknowledge-mode auto on its container factory, e.g."
                        + " spring.rabbitmq.listener." + type + ".acknowledge-mode=auto) and remove the method's own"
                        + " basicAck/basicNack calls");
    }
}
