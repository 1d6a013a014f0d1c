package dev.idem.spring.rabbit;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.Envelope;
import dev.idem.DeadLetterException;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.rabbitmq.DeliveryProcessor;
import dev.idem.rabbitmq.RabbitTopology;
import dev.idem.spring.Idempotent;
import dev.idem.spring.IdempotentRejectedException;
import dev.idem.spring.IdempotentRetryLaterException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.support.DefaultMessagePropertiesConverter;
import org.springframework.amqp.rabbit.support.MessagePropertiesConverter;
import org.springframework.amqp.support.converter.MessageConversionException;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.annotation.AnnotatedElementUtils;

/**
 * The first advice of a Rabbit listener container (it wraps the others, spring-rabbit's retry interceptor included):
 * turns a failed delivery of an {@link Idempotent} listener into idem-rabbitmq's delayed retry or dead letter instead
 * of spring-rabbit's immediate requeue, in the container's own acknowledge mode ({@code AUTO}, the default; a guarded
 * listener's container in another mode fails the startup: {@link GuardedListenerAckMode}).
 *
 * <ul>
 *   <li>{@link IdempotentRetryLaterException} ({@code IN_PROGRESS}, {@code OUT_OF_ORDER}, {@code FAILED}) and the
 *       listener's own exception: a copy goes to the queue's retry queue ({@code <queue>.retry}) with the back-off as
 *       its TTL and comes back to the queue when it ends; {@code FAILED}/{@code OUT_OF_ORDER} attempts are counted in
 *       header {@code idem-attempts} and dead-lettered at the bound, {@code IN_PROGRESS} never is.
 *   <li>{@link IdempotentRejectedException}, a {@link DeadLetterException}, a message that cannot be converted (nor its payload to the method's parameter): a
 *       copy goes to the queue's dead-letter exchange ({@code <queue>.dlx}) with the reason in {@code
 *       idem-dlq-reason} (and {@code idem-dlq-outcome}, ...).
 * </ul>
 *
 * The copy is confirmed by the broker before the advice returns and the container acks the delivery; when it is not,
 * the channel is aborted and the delivery goes back to the queue unacked. Failures of listeners that are not {@code
 * Idempotent} (and whose exception is not one of Idem's) pass through unchanged, to spring-rabbit's own handling.
 * The topology ({@link RabbitTopology#forQueue}) must exist. Thread-safe.
 */
public final class IdemRabbitAdvice implements MethodInterceptor {
    private static final MessagePropertiesConverter PROPERTIES = new DefaultMessagePropertiesConverter();

    private final RetryPolicy retryPolicy;
    private final Duration confirmTimeout;
    private final IdempotencyListener listener;
    private final Map<String, DeliveryProcessor> processors = new ConcurrentHashMap<>();

    public IdemRabbitAdvice(RetryPolicy retryPolicy, Duration confirmTimeout, IdempotencyListener listener) {
        this.retryPolicy = retryPolicy;
        this.confirmTimeout = confirmTimeout;
        this.listener = listener;
    }

    @Override
    public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
        try {
            return invocation.proceed();
        } catch (Exception e) {
            Object[] arguments = invocation.getArguments();
            if (arguments.length != 2
                    || !(arguments[0] instanceof Channel channel)
                    || !(arguments[1] instanceof Message message)
                    || !guarded(message, e)) {
                throw e;
            }
            String queue = message.getMessageProperties().getConsumerQueue();
            if (queue == null) {
                throw e;
            }
            processorOf(queue).settleWithoutAck(channel, delivery(message), null, outcomeOf(e));
            return null;
        }
    }

    /** Whether the failure is Idem's to settle: the listener is {@code @Idempotent}, or an Idem outcome failed it. */
    private static boolean guarded(Message message, Exception e) {
        if (idemCause(e) != null) {
            return true;
        }
        Method method = message.getMessageProperties().getTargetMethod();
        Object bean = message.getMessageProperties().getTargetBean();
        if (method == null) {
            return false;
        }
        Method specific = bean == null ? method : AopUtils.getMostSpecificMethod(method, AopUtils.getTargetClass(bean));
        return AnnotatedElementUtils.hasAnnotation(specific, Idempotent.class);
    }

    /** The outcome a failed delivery stands for. */
    static Outcome outcomeOf(Exception e) {
        Throwable idem = idemCause(e);
        if (idem instanceof IdempotentRetryLaterException retry) {
            return retry.outcome();
        }
        if (idem instanceof IdempotentRejectedException rejected) {
            return rejected.outcome();
        }
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof DeadLetterException
                    || t instanceof MessageConversionException
                    || t instanceof org.springframework.messaging.converter.MessageConversionException) {
                return Outcome.rejected(t.getClass().getName() + ": " + t.getMessage(), t);
            }
        }
        Throwable own = e.getCause() != null ? e.getCause() : e; // spring-rabbit wraps the listener's exception
        return own instanceof Exception ex
                ? Outcome.ofException(ex)
                : Outcome.failed("listener threw " + own.getClass().getName() + ": " + own.getMessage(), own);
    }

    private static @Nullable Throwable idemCause(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof IdempotentRetryLaterException || t instanceof IdempotentRejectedException) {
                return t;
            }
        }
        return null;
    }

    private DeliveryProcessor processorOf(String queue) {
        return processors.computeIfAbsent(
                queue,
                q -> DeliveryProcessor.builder(RabbitTopology.forQueue(q))
                        .retryPolicy(retryPolicy)
                        .confirmTimeout(confirmTimeout)
                        .listener(listener)
                        .buildForSettling());
    }

    /** The amqp-client delivery of a Spring message, as idem-rabbitmq reads it. */
    private static Delivery delivery(Message message) {
        MessageProperties p = message.getMessageProperties();
        Envelope envelope = new Envelope(
                p.getDeliveryTag(),
                Boolean.TRUE.equals(p.isRedelivered()),
                p.getReceivedExchange(),
                p.getReceivedRoutingKey());
        return new Delivery(
                envelope, PROPERTIES.fromMessageProperties(p, StandardCharsets.UTF_8.name()), message.getBody());
    }
}
