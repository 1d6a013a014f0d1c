package dev.idem.spring.kafka;

import dev.idem.DeadLetterException;
import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import dev.idem.spring.IdempotentRejectedException;
import dev.idem.spring.IdempotentRetryLaterException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;
import org.springframework.kafka.listener.RetryListener;

/**
 * Tells Idem's listener what the error handler did: {@code RETRY_SCHEDULED} for each failed delivery of a retryable
 * record (the attempt that failed; the last one is followed by the dead letter instead of a retry), {@code DEAD_LETTERED} for each record
 * handed to the recoverer. Source {@code spring-kafka}; the namespace is the guard's, or the topic for a listener's own
 * exception.
 */
final class KafkaEvents implements RetryListener {
    static final String SOURCE = "spring-kafka";

    private final IdempotencyListener listener;

    KafkaEvents(IdempotencyListener listener) {
        this.listener = listener;
    }

    @Override
    public void failedDelivery(ConsumerRecord<?, ?> record, @Nullable Exception ex, int deliveryAttempt) {
        if (Causes.find(ex, DeadLetterException.class) != null) {
            return; // not retried: its DEAD_LETTERED event follows
        }
        emit(IdempotencyEvent.Type.RETRY_SCHEDULED, record, ex, deliveryAttempt);
    }

    @Override
    public void recovered(ConsumerRecord<?, ?> record, @Nullable Exception ex) {
        emit(IdempotencyEvent.Type.DEAD_LETTERED, record, ex, 0);
    }

    private void emit(IdempotencyEvent.Type type, ConsumerRecord<?, ?> record, @Nullable Exception ex, int attempt) {
        IdempotentRetryLaterException retry = Causes.find(ex, IdempotentRetryLaterException.class);
        IdempotentRejectedException rejected = Causes.find(ex, IdempotentRejectedException.class);
        String namespace = retry != null ? retry.namespace() : rejected != null ? rejected.namespace() : record.topic();
        Outcome outcome = retry != null
                ? retry.outcome()
                : rejected != null
                        ? rejected.outcome()
                        : Outcome.failed(IdemKafka.Verdict.of(ex).reason(), ex);
        listener.onEvent(IdempotencyEvent.builder(type, namespace)
                .source(SOURCE)
                .outcome(outcome)
                .attempt(attempt)
                .message(record.topic() + "-" + record.partition() + "@" + record.offset())
                .build());
    }
}
