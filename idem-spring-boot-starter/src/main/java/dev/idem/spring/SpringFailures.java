package dev.idem.spring;

import dev.idem.RetryPolicy;
import dev.idem.spi.DeliveryDecision;
import dev.idem.spi.FailureClassifier;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.transaction.CannotCreateTransactionException;
import org.springframework.transaction.TransactionSystemException;
import org.springframework.util.ClassUtils;

/**
 * The starter's one classification of what a guarded listener threw, for spring-kafka's error handler and the Rabbit
 * advice alike: {@link FailureClassifier#standard()} taught Spring's exceptions.
 *
 * <ul>
 *   <li>Spring's {@link CannotCreateTransactionException} and {@link DataAccessResourceFailureException}: the database
 *       cannot be reached, an uncounted wait that is never dead-lettered.
 *   <li>{@link TransactionSystemException}: classified by its application exception too, which a failed rollback
 *       replaced (and does not hold as its cause).
 *   <li>{@link IdempotentRetryLaterException} and {@link IdempotentRejectedException}: the guard's own outcome.
 *   <li>A message that cannot be converted to the method's parameters (spring-messaging's, spring-amqp's and
 *       spring-kafka's conversion and deserialization exceptions, when present): rejected, dead-lettered at once.
 * </ul>
 */
public final class SpringFailures {
    private static final String[] REJECTIONS = {
        "org.springframework.messaging.converter.MessageConversionException",
        "org.springframework.messaging.handler.invocation.MethodArgumentResolutionException",
        "org.springframework.amqp.support.converter.MessageConversionException",
        "org.springframework.kafka.support.serializer.DeserializationException",
        "org.springframework.kafka.support.converter.ConversionException"
    };
    private static final FailureClassifier CLASSIFIER = build();

    private SpringFailures() {}

    /** The classifier; immutable and thread-safe. */
    public static FailureClassifier classifier() {
        return CLASSIFIER;
    }

    /** The delivery decision with {@code policy} and {@link #classifier()}. */
    public static DeliveryDecision decision(RetryPolicy policy) {
        return DeliveryDecision.of(policy, CLASSIFIER);
    }

    private static FailureClassifier build() {
        FailureClassifier.Builder builder = FailureClassifier.builder()
                .unreachable(CannotCreateTransactionException.class)
                .unreachable(DataAccessResourceFailureException.class)
                .links(TransactionSystemException.class, TransactionSystemException::getApplicationException)
                .carries(IdempotentRetryLaterException.class, IdempotentRetryLaterException::outcome)
                .carries(IdempotentRejectedException.class, IdempotentRejectedException::outcome);
        ClassLoader loader = SpringFailures.class.getClassLoader();
        for (String rejection : REJECTIONS) {
            if (ClassUtils.isPresent(rejection, loader)) {
                builder.rejection(ClassUtils.resolveClassName(rejection, loader).asSubclass(Throwable.class));
            }
        }
        return builder.build();
    }
}
