package dev.idem.spring.rabbit;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.Envelope;
import dev.idem.IdempotencyListener;
import dev.idem.RetryPolicy;
import dev.idem.rabbitmq.DeliveryProcessor;
import dev.idem.rabbitmq.RabbitTopology;
import dev.idem.spring.Idempotent;
import dev.idem.spring.IdempotentRejectedException;
import dev.idem.spring.IdempotentRetryLaterException;
import dev.idem.spring.SpringFailures;
import dev.idem.spring.internal.ListenerContainerChecks;
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

/**
 * The first advice of a Rabbit listener container (it wraps the others, spring-rabbit's retry interceptor included):
 * turns a failed delivery of an {@link Idempotent} listener into idem-rabbitmq's delayed retry or dead letter instead
 * of spring-rabbit's immediate requeue, in the container's own acknowledge mode ({@code AUTO}, the default; a guarded
 * listener's container in another mode fails the startup: {@link GuardedListenerAckMode}).
 *
 * What a failure stands for is {@link SpringFailures#classifier()}'s answer, and idem-rabbitmq's delivery decision
 * settles it:
 *
 * <ul>
 *   <li>{@code IN_PROGRESS} (the key held elsewhere), a database or store that cannot be reached (Spring's {@code
 *       CannotCreateTransactionException}, a rollback that failed on a closed connection, the inbox's {@code
 *       RetryLaterException}): a copy goes to the queue's retry queue ({@code <queue>.retry}) with the back-off as its
 *       TTL and comes back to the queue when it ends, never counted, never dead-lettered.
 *   <li>{@code FAILED}, {@code OUT_OF_ORDER}, the listener's own exception: the same way, counted in header {@code
 *       idem-attempts}, dead-lettered at the bound.
 *   <li>{@code REJECTED}, a message that cannot be converted (nor its payload to the method's parameter): a copy goes
 *       to the queue's dead-letter exchange ({@code <queue>.dlx}) with the reason in {@code idem-dlq-reason} (and
 *       {@code idem-dlq-outcome}, ...).
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
            processorOf(queue).settleWithoutAck(channel, delivery(message), null, e);
            return null;
        }
    }

    /**
     * Whether the failure is Idem's to settle: the listener is {@code @Idempotent}, or the guard of a method it called
     * answered the failure.
     */
    private static boolean guarded(Message message, Exception e) {
        if (answeredByAGuard(e)) {
            return true;
        }
        Method method = message.getMessageProperties().getTargetMethod();
        return method != null
                && ListenerContainerChecks.guarded(
                        method, message.getMessageProperties().getTargetBean());
    }

    private static boolean answeredByAGuard(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof IdempotentRetryLaterException || t instanceof IdempotentRejectedException) {
                return true;
            }
        }
        return false;
    }

    private DeliveryProcessor processorOf(String queue) {
        return processors.computeIfAbsent(
                queue,
                q -> DeliveryProcessor.builder(RabbitTopology.forQueue(q))
                        .retryPolicy(retryPolicy)
                        .classifier(SpringFailures.classifier())
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
