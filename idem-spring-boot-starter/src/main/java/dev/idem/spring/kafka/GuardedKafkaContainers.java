package dev.idem.spring.kafka;

import dev.idem.ConfigurationException;
import dev.idem.spring.internal.ListenerContainerChecks;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpoint;
import org.springframework.kafka.config.MethodKafkaListenerEndpoint;
import org.springframework.kafka.config.MultiMethodKafkaListenerEndpoint;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.ContainerProperties.AckMode;

/**
 * Checks each container a Kafka listener container factory creates for an {@code @Idempotent} (or {@code
 * IdempotentBatch}) listener, as it really is once the factory, its {@code ContainerCustomizer} and the endpoint
 * configured it:
 *
 * <ul>
 *   <li>no error handler (an application's own factory): it gets Idem's ({@link IdemKafka#errorHandler}); another
 *       error handler fails the startup: spring-kafka's default gives up on a record after 10 deliveries and commits
 *       it, so an {@code IN_PROGRESS}, {@code FAILED} or {@code REJECTED} record would be skipped unapplied.
 *   <li>acknowledge mode {@code MANUAL} or {@code MANUAL_IMMEDIATE} fails the startup: a duplicate the guard skips never
 *       reaches the method's {@code acknowledge()}, so its offset is never committed.
 *   <li>a container transaction manager (e.g. a {@code KafkaTransactionManager}) fails the startup: failures go to
 *       its after-rollback processor, which skips a record after 10 deliveries.
 *   <li>a listener-level {@code errorHandler} ({@code @KafkaListener(errorHandler = ...)}) fails the startup: it sees
 *       the guard's retry exceptions first, and a value it returns commits the record unapplied.
 *   <li>a retry-topic endpoint ({@code @RetryableTopic}) fails the startup: its own error handler sends a record to the
 *       next retry topic and at last to its dead-letter topic by count, an {@code IN_PROGRESS} one included.
 * </ul>
 */
final class GuardedKafkaContainers implements MethodInterceptor {
    private final String factoryName;
    private final Supplier<@Nullable CommonErrorHandler> idemHandler;

    /** @param idemHandler Idem's error handler, when the context declares it */
    GuardedKafkaContainers(String factoryName, Supplier<@Nullable CommonErrorHandler> idemHandler) {
        this.factoryName = factoryName;
        this.idemHandler = idemHandler;
    }

    @Override
    public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
        Object container = invocation.proceed();
        Object[] arguments = invocation.getArguments();
        if (arguments.length == 1
                && arguments[0] instanceof KafkaListenerEndpoint endpoint
                && container instanceof AbstractMessageListenerContainer<?, ?> c) {
            List<Method> guarded = guardedMethods(endpoint);
            if (!guarded.isEmpty()) {
                check(guarded.get(0), endpoint, c);
            }
        }
        return container;
    }

    private void check(Method method, KafkaListenerEndpoint endpoint, AbstractMessageListenerContainer<?, ?> c) {
        String where = "@Idempotent on " + method.getDeclaringClass().getName() + "." + method.getName()
                + " is a @KafkaListener of container factory '" + factoryName + "'";
        if (endpoint.getMainListenerId() != null) {
            throw new ConfigurationException(
                    where + " with retry topics (@RetryableTopic or a RetryTopicConfiguration):"
                            + " their error handler moves a record to the next retry topic and at last to the dead-letter topic"
                            + " by count, an IN_PROGRESS one (its key held by another consumer, or the database unreachable)"
                            + " included. Remove the retry topics from this listener: Idem's error handler retries in place,"
                            + " never gives up on IN_PROGRESS, and dead-letters to <topic>-dlt");
        }
        String listenerHandler = listenerErrorHandler(method);
        if (listenerHandler != null) {
            throw new ConfigurationException(where + " with its own errorHandler ('" + listenerHandler + "'): it is"
                    + " handed the guard's InProgressException and NotYetAppliedException (and a database outage)"
                    + " before Idem's error handler, and whatever it returns commits the record unapplied, never"
                    + " retried nor dead-lettered. Remove errorHandler from this @KafkaListener: Idem's error handler"
                    + " retries and dead-letters to <topic>-dlt with the reason");
        }
        if (c.getContainerProperties().getTransactionManager() != null
                || c.getContainerProperties().getKafkaAwareTransactionManager() != null) {
            throw new ConfigurationException(where + " whose container runs the listener in a transaction of its own"
                    + " (a KafkaTransactionManager, e.g. from spring.kafka.producer.transaction-id-prefix): its"
                    + " failures go to the container's AfterRollbackProcessor, not to Idem's error handler, which gives"
                    + " up on a record after 10 deliveries and skips it, an IN_PROGRESS one included. Remove the"
                    + " transaction manager from this listener's container factory (Idem makes the method's database"
                    + " effects exactly-once inside the application's own @Transactional), or guard a listener whose"
                    + " container has none");
        }
        AckMode mode = c.getContainerProperties().getAckMode();
        if (mode == AckMode.MANUAL || mode == AckMode.MANUAL_IMMEDIATE) {
            throw new ConfigurationException(where + " whose container acknowledges in mode " + mode + ": a duplicate"
                    + " the guard skips never runs the method, so nothing acknowledges it and its offset is never"
                    + " committed (the record comes back at every rebalance). Use ack mode BATCH or RECORD"
                    + " (spring.kafka.listener.ack-mode, or the factory's ContainerProperties) and remove the"
                    + " Acknowledgment parameter: the container commits after the method (and its transaction)"
                    + " returned, and Idem's error handler settles retries and dead letters");
        }
        CommonErrorHandler handler = c.getCommonErrorHandler();
        if (handler == null) {
            CommonErrorHandler idem = idemHandler.get();
            if (idem != null && IdemKafka.isIdems(idem)) {
                c.setCommonErrorHandler(idem);
                return;
            }
        } else if (IdemKafka.isIdems(handler)) {
            return;
        }
        throw new ConfigurationException(where + ", whose container has "
                + (handler == null
                        ? "no error handler"
                        : "error handler " + handler.getClass().getName())
                + ", not Idem's: spring-kafka's default handler gives up on a record after 10 deliveries and commits"
                + " it, so an IN_PROGRESS, FAILED or REJECTED record is skipped, never applied nor dead-lettered. Set"
                + " IdemKafka.errorHandler(IdemKafka.deadLetters(template), retryPolicy, listener) as the factory's"
                + " CommonErrorHandler, or remove the application's own CommonErrorHandler (bean or"
                + " setCommonErrorHandler) so that the starter's is used");
    }

    /** The listener-level error handler of {@code method}'s {@code @KafkaListener} (or its class's), if any. */
    private static @Nullable String listenerErrorHandler(Method method) {
        List<KafkaListener> listeners =
                new ArrayList<>(AnnotatedElementUtils.findMergedRepeatableAnnotations(method, KafkaListener.class));
        listeners.addAll(
                AnnotatedElementUtils.findMergedRepeatableAnnotations(method.getDeclaringClass(), KafkaListener.class));
        return listeners.stream()
                .map(KafkaListener::errorHandler)
                .filter(name -> !name.isBlank())
                .findFirst()
                .orElse(null);
    }

    private static List<Method> guardedMethods(KafkaListenerEndpoint endpoint) {
        List<Method> methods = new ArrayList<>();
        if (endpoint instanceof MultiMethodKafkaListenerEndpoint<?, ?> multi) { // a class-level @KafkaListener
            methods.addAll(multi.getMethods());
            methods.replaceAll(m -> ListenerContainerChecks.specific(m, multi.getBean()));
            methods.removeIf(m -> !ListenerContainerChecks.guarded(m, null));
        } else if (endpoint instanceof MethodKafkaListenerEndpoint<?, ?> single && single.getMethod() != null) {
            Method m = ListenerContainerChecks.specific(single.getMethod(), single.getBean());
            if (ListenerContainerChecks.guarded(m, null)) {
                methods.add(m);
            }
        }
        return methods;
    }
}
