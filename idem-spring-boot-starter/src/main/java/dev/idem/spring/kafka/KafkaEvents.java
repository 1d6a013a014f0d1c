package dev.idem.spring.kafka;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import dev.idem.spi.FailureClassifier;
import dev.idem.spi.Verdict;
import dev.idem.spring.IdempotentRejectedException;
import dev.idem.spring.IdempotentRetryLaterException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;
import org.springframework.kafka.listener.RetryListener;

/**
 * Tells Idem's listener what the error handler did: {@code RETRY_SCHEDULED} for each retry the decision scheduled
 * (with the outcome it follows from: an unreachable database is {@code IN_PROGRESS}, not {@code FAILED}), {@code
 * DEAD_LETTERED} for each record handed to the recoverer. Source {@code spring-kafka}; the namespace is the guard's,
 * or the topic for a listener's own exception.
 */
final class KafkaEvents implements RetryListener {
    static final String SOURCE = "spring-kafka";

    private final IdempotencyListener listener;
    private final FailureClassifier classifier;
    private final HandledFailure failure;

    KafkaEvents(IdempotencyListener listener, FailureClassifier classifier, HandledFailure failure) {
        this.listener = listener;
        this.classifier = classifier;
        this.failure = failure;
    }

    void retryScheduled(ConsumerRecord<?, ?> record, @Nullable Exception ex, Verdict.Retry retry, int delivery) {
        emit(IdempotencyEvent.Type.RETRY_SCHEDULED, record, ex, retry.outcome(), delivery);
    }

    @Override
    public void failedDelivery(ConsumerRecord<?, ?> record, @Nullable Exception ex, int deliveryAttempt) {
        // told by VerdictBackOff, which knows whether the delivery is retried
    }

    @Override
    public void recovered(ConsumerRecord<?, ?> record, @Nullable Exception ex) {
        Outcome dead = failure.deadLetter();
        Outcome outcome = dead != null
                ? dead
                : ex == null ? Outcome.failed("failed without an exception", null) : classifier.classify(ex);
        emit(IdempotencyEvent.Type.DEAD_LETTERED, record, ex, outcome, 0);
    }

    private void emit(
            IdempotencyEvent.Type type,
            ConsumerRecord<?, ?> record,
            @Nullable Exception ex,
            Outcome outcome,
            int attempt) {
        listener.onEvent(IdempotencyEvent.builder(type, namespace(record, ex))
                .source(SOURCE)
                .outcome(outcome)
                .attempt(attempt)
                .message(record.topic() + "-" + record.partition() + "@" + record.offset())
                .build());
    }

    private static String namespace(ConsumerRecord<?, ?> record, @Nullable Throwable ex) {
        for (Throwable t = ex; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof IdempotentRetryLaterException retry) {
                return retry.namespace();
            }
            if (t instanceof IdempotentRejectedException rejected) {
                return rejected.namespace();
            }
        }
        return record.topic();
    }
}
