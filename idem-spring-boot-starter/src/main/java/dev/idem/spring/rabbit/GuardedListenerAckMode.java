package dev.idem.spring.rabbit;

import dev.idem.ConfigurationException;
import dev.idem.spring.Idempotent;
import dev.idem.spring.IdempotentBatch;
import dev.idem.spring.internal.ListenerContainerChecks;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.aopalliance.aop.Advice;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.rabbit.annotation.RabbitHandler;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.amqp.rabbit.config.BaseRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.DirectMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.MethodRabbitListenerEndpoint;
import org.springframework.amqp.rabbit.listener.MultiMethodRabbitListenerEndpoint;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Fails the startup when a container factory creates the container of an {@link Idempotent} {@code @RabbitListener}
 * in another acknowledge mode than {@link AcknowledgeMode#AUTO}, with the mode the container really has (the
 * factory's, or the listener's own {@code ackMode}), or the container of an {@link IdempotentBatch} one in any mode, or
 * of one with its own {@code errorHandler}, a transacted channel, or an advice chain without {@link IdemRabbitAdvice}.
 *
 * <p>The guard and {@link IdemRabbitAdvice} settle what they decide (a duplicate the method never sees, a retry copy, a
 * dead letter) by returning to the container, which acks. In {@code MANUAL} nothing acks those deliveries: each holds
 * a prefetch slot until its channel closes and then comes back, again and again. In {@code NONE} the broker forgets a
 * delivery as it sends it, so a crash inside the method loses the message.
 */
final class GuardedListenerAckMode implements MethodInterceptor {
    private static final Method ADVICE_CHAIN = adviceChainGetter();

    /**
     * {@code factory}, checking every container it creates for an endpoint (see {@link
     * ListenerContainerChecks#around}).
     */
    static Object around(BaseRabbitListenerContainerFactory<?> factory) {
        return ListenerContainerChecks.around(
                factory,
                new GuardedListenerAckMode(),
                "the acknowledge mode of the @Idempotent @RabbitListeners (a guarded listener needs AUTO)");
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
            for (Method m : guarded) {
                String handler = listenerErrorHandler(m);
                if (handler != null) {
                    throw errorHandlerRefusal(m, handler);
                }
            }
            if (!guarded.isEmpty() && !advised(c)) {
                throw unadvisedRefusal(guarded.get(0));
            }
            if (!guarded.isEmpty() && c.isChannelTransacted()) {
                throw transactedRefusal(guarded.get(0));
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

    /** The listener-level error handler of {@code method}'s {@code @RabbitListener} (or its class's), if any. */
    private static @Nullable String listenerErrorHandler(Method method) {
        List<RabbitListener> listeners =
                new ArrayList<>(AnnotatedElementUtils.findMergedRepeatableAnnotations(method, RabbitListener.class));
        listeners.addAll(AnnotatedElementUtils.findMergedRepeatableAnnotations(
                method.getDeclaringClass(), RabbitListener.class));
        return listeners.stream()
                .map(RabbitListener::errorHandler)
                .filter(name -> !name.isBlank())
                .findFirst()
                .orElse(null);
    }

    /** Whether {@link IdemRabbitAdvice} is in the container's advice chain (a customizer may have replaced it). */
    private static boolean advised(AbstractMessageListenerContainer container) {
        Advice[] chain = (Advice[]) ReflectionUtils.invokeMethod(ADVICE_CHAIN, container);
        return chain != null && Arrays.stream(chain).anyMatch(IdemRabbitAdvice.class::isInstance);
    }

    private static Method adviceChainGetter() {
        Method getter = ReflectionUtils.findMethod(AbstractMessageListenerContainer.class, "getAdviceChain");
        if (getter == null) {
            throw new IllegalStateException("spring-rabbit's AbstractMessageListenerContainer has no getAdviceChain()");
        }
        ReflectionUtils.makeAccessible(getter);
        return getter;
    }

    private static ConfigurationException unadvisedRefusal(Method method) {
        return new ConfigurationException("@Idempotent on "
                + method.getDeclaringClass().getName() + "."
                + method.getName() + " is a @RabbitListener whose container's advice chain has no IdemRabbitAdvice (a"
                + " ContainerCustomizer or ContainerPostProcessor that calls setAdviceChain replaced the factory's):"
                + " spring-rabbit would requeue each failure at once, an IN_PROGRESS key in a loop without delay and a"
                + " rejected message forever. Set advices on the container factory instead (setAdviceChain before the"
                + " factory is a bean: Idem's advice is put first), or keep the container's chain and add yours to it");
    }

    /**
     * The advice publishes its copies with publisher confirms, which a transacted channel refuses by closing: the
     * delivery would come back at once, again and again, and never be dead-lettered.
     */
    private static ConfigurationException transactedRefusal(Method method) {
        return new ConfigurationException("@Idempotent on "
                + method.getDeclaringClass().getName() + "."
                + method.getName() + " is a @RabbitListener whose container's channel is transacted: Idem's advice"
                + " publishes a failed delivery's retry or dead-letter copy with publisher confirms, which the broker"
                + " refuses on a transacted channel (it closes the channel), so the delivery would come back at once,"
                + " again and again, never delayed nor dead-lettered. Call setChannelTransacted(false) on its container"
                + " factory (the default): the container acks after the method's own @Transactional committed");
    }

    /**
     * A listener-level error handler sees the guard's exceptions before the advice: a value it returns has the container
     * ack the message unapplied.
     */
    private static ConfigurationException errorHandlerRefusal(Method method, String handler) {
        return new ConfigurationException("@Idempotent on "
                + method.getDeclaringClass().getName() + "."
                + method.getName() + " is a @RabbitListener with its own errorHandler ('" + handler + "'): it is handed"
                + " the guard's InProgressException and NotYetAppliedException (and a database outage) before Idem's"
                + " advice, and whatever it returns has the container ack the message unapplied, never retried nor"
                + " dead-lettered. Remove errorHandler from this @RabbitListener: Idem's advice sends the message to"
                + " <queue>.retry or <queue>.dlx with the reason");
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
        methods.removeIf(m -> !ListenerContainerChecks.guarded(m, null));
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
