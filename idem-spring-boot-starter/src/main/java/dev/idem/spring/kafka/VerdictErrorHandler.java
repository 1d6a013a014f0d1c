package dev.idem.spring.kafka;

import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import dev.idem.spi.Attempts;
import dev.idem.spi.DeliveryDecision;
import dev.idem.spi.Verdict;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.springframework.kafka.listener.ConsumerAwareRecordRecoverer;
import org.springframework.kafka.listener.ConsumerRecordRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.ErrorHandlingUtils;
import org.springframework.kafka.listener.ListenerUtils;
import org.springframework.kafka.listener.MessageListenerContainer;

/**
 * spring-kafka's {@link DefaultErrorHandler}, each failed delivery decided by the starter's {@link DeliveryDecision}
 * ({@link VerdictBackOff}) instead of spring-kafka's own classification: no exception is "not retryable" to
 * spring-kafka, and a record keeps its attempt counts when its exception changes (the decision tells a wait from a
 * failure). While it handles a failure, the exception is the consumer thread's, for the back-off to read.
 */
final class VerdictErrorHandler extends DefaultErrorHandler {
    private final HandledFailure failure;
    private final DeliveryDecision decision;
    private final KafkaEvents events;

    private VerdictErrorHandler(
            ConsumerRecordRecoverer recoverer, DeliveryDecision decision, KafkaEvents events, HandledFailure failure) {
        super(told(recoverer, failure), new VerdictBackOff(decision, failure, null, events));
        this.failure = failure;
        this.decision = decision;
        this.events = events;
        setBackOffFunction((record, e) -> new VerdictBackOff(decision, failure, record, events));
        setResetStateOnExceptionChange(false);
        setClassifications(Map.of(), true);
        setRetryListeners(events);
    }

    static VerdictErrorHandler of(
            ConsumerRecordRecoverer recoverer, DeliveryDecision decision, IdempotencyListener listener) {
        HandledFailure failure = new HandledFailure();
        return new VerdictErrorHandler(
                recoverer, decision, new KafkaEvents(listener, decision.classifier(), failure), failure);
    }

    /**
     * {@code recoverer}, given the record's exception with the decision's dead-letter outcome when there is one; a
     * record it refuses is noted as kept.
     */
    private static ConsumerAwareRecordRecoverer told(ConsumerRecordRecoverer recoverer, HandledFailure failure) {
        return (record, consumer, exception) -> {
            Outcome dead = failure.deadLetter();
            Exception told = dead == null || exception == null ? exception : new DeadLetteredException(dead, exception);
            try {
                if (recoverer instanceof ConsumerAwareRecordRecoverer aware) {
                    aware.accept(record, consumer, told);
                } else {
                    recoverer.accept(record, told);
                }
            } catch (RuntimeException e) {
                failure.kept(record);
                throw e;
            }
        };
    }

    /**
     * Runs {@code handling} with {@code thrown} as this thread's failure; when the recoverer refused a record (no
     * dead-letter topic, a send that failed), waits the policy's longest delay before it is delivered again: its
     * dead-letter verdict comes at once, and nothing else would slow its redeliveries down.
     */
    private <T> T handling(Exception thrown, MessageListenerContainer container, Supplier<T> handling) {
        return failure.during(thrown, () -> {
            try {
                return handling.get();
            } finally {
                ConsumerRecord<?, ?> kept = failure.kept();
                if (kept != null) {
                    waitBeforeRedelivery(kept, container);
                }
            }
        });
    }

    private void waitBeforeRedelivery(ConsumerRecord<?, ?> kept, MessageListenerContainer container) {
        Exception e = ErrorHandlingUtils.findRootCause(failure.exception());
        Outcome dead = failure.deadLetter();
        Outcome outcome = dead != null
                ? dead
                : e == null
                        ? Outcome.failed("failed without an exception", null)
                        : decision.classifier().classify(e);
        Duration delay = decision.retryPolicy().maxDelay();
        events.retryScheduled(kept, e, new Verdict.Retry(outcome, delay, false, Attempts.NONE), 0);
        try {
            ListenerUtils.stoppableSleep(container, delay.toMillis());
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public boolean handleOne(
            Exception thrownException,
            ConsumerRecord<?, ?> record,
            Consumer<?, ?> consumer,
            MessageListenerContainer container) {
        return handling(
                thrownException, container, () -> super.handleOne(thrownException, record, consumer, container));
    }

    @Override
    public void handleRemaining(
            Exception thrownException,
            List<ConsumerRecord<?, ?>> records,
            Consumer<?, ?> consumer,
            MessageListenerContainer container) {
        handling(thrownException, container, () -> {
            super.handleRemaining(thrownException, records, consumer, container);
            return null;
        });
    }

    @Override
    public void handleBatch(
            Exception thrownException,
            ConsumerRecords<?, ?> data,
            Consumer<?, ?> consumer,
            MessageListenerContainer container,
            Runnable invokeListener) {
        handling(thrownException, container, () -> {
            super.handleBatch(thrownException, data, consumer, container, invokeListener);
            return null;
        });
    }

    @Override
    public <K, V> ConsumerRecords<K, V> handleBatchAndReturnRemaining(
            Exception thrownException,
            ConsumerRecords<?, ?> data,
            Consumer<?, ?> consumer,
            MessageListenerContainer container,
            Runnable invokeListener) {
        return handling(
                thrownException,
                container,
                () -> super.handleBatchAndReturnRemaining(thrownException, data, consumer, container, invokeListener));
    }
}
