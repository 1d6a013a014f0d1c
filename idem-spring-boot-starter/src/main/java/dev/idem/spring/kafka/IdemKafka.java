package dev.idem.spring.kafka;

import dev.idem.DeadLetterException;
import dev.idem.IdempotencyListener;
import dev.idem.RetryPolicy;
import dev.idem.spring.IdempotentRejectedException;
import dev.idem.spring.IdempotentRetryLaterException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.jspecify.annotations.Nullable;
import org.springframework.kafka.core.KafkaOperations;
import org.springframework.kafka.listener.ConsumerRecordRecoverer;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;

/**
 * spring-kafka's stock error handling, set up for {@code @Idempotent} listeners. The starter declares {@link
 * #errorHandler} as the container factory's error handler; call these yourself when you build your own.
 */
public final class IdemKafka {
    /** Header of a dead-lettered record: the outcome that sent it there ({@code REJECTED}, {@code FAILED}, ...). */
    public static final String OUTCOME_HEADER = "idem-outcome";
    /** Header of a dead-lettered record: why, as the guard or the exception said it. */
    public static final String REASON_HEADER = "idem-reason";

    private IdemKafka() {}

    /**
     * A {@link DefaultErrorHandler} that retries a record with the outcome's back-off and never acks it unprocessed:
     * {@code IN_PROGRESS} ({@link dev.idem.spring.InProgressException}) is retried without an attempt bound, after the
     * outcome's delay or {@code inProgressDelay}; {@code OUT_OF_ORDER}, {@code FAILED} and the listener's own
     * exceptions follow {@code policy} (never sooner than the outcome's delay) and then go to {@code recoverer};
     * {@link DeadLetterException} ({@code REJECTED}) goes to {@code recoverer} at once.
     *
     * @param recoverer where exhausted and rejected records go, e.g. {@link #deadLetters}, or {@link #keepRetrying()}
     * @param listener told of every failed delivery ({@code RETRY_SCHEDULED}) and dead letter ({@code DEAD_LETTERED})
     */
    public static DefaultErrorHandler errorHandler(
            ConsumerRecordRecoverer recoverer,
            RetryPolicy policy,
            Duration inProgressDelay,
            IdempotencyListener listener) {
        DefaultErrorHandler handler = new DefaultErrorHandler(recoverer, new RetryPolicyBackOff(policy, Duration.ZERO));
        handler.setBackOffFunction(new OutcomeBackOffs(policy, inProgressDelay));
        handler.setResetStateOnExceptionChange(true);
        handler.addNotRetryableExceptions(DeadLetterException.class);
        handler.setRetryListeners(new KafkaEvents(listener));
        return handler;
    }

    /**
     * Publishes a record to {@code <topic>-dlt} (same partition) with spring-kafka's exception headers and {@link
     * #OUTCOME_HEADER} / {@link #REASON_HEADER}.
     */
    public static DeadLetterPublishingRecoverer deadLetters(KafkaOperations<?, ?> template) {
        DeadLetterPublishingRecoverer recoverer = new DeadLetterPublishingRecoverer(template);
        recoverer.addHeadersFunction((record, exception) -> reasonHeaders(exception));
        return recoverer;
    }

    /**
     * A recoverer for applications without a dead-letter topic: it refuses every record, so spring-kafka keeps the
     * record and retries it (its back-off starts again) instead of skipping it unprocessed.
     */
    public static ConsumerRecordRecoverer keepRetrying() {
        return (record, exception) -> {
            throw new IllegalStateException("record " + record.topic() + "-" + record.partition() + "@"
                    + record.offset() + " ended " + Verdict.of(exception)
                    + " and there is no dead-letter topic: it is kept and retried; declare a KafkaTemplate and set"
                    + " idem.kafka.dead-letter=true to park it instead");
        };
    }

    static Headers reasonHeaders(@Nullable Exception exception) {
        Verdict verdict = Verdict.of(exception);
        RecordHeaders headers = new RecordHeaders();
        headers.add(OUTCOME_HEADER, verdict.outcome().getBytes(StandardCharsets.UTF_8));
        headers.add(REASON_HEADER, verdict.reason().getBytes(StandardCharsets.UTF_8));
        return headers;
    }

    /** The outcome and reason a failed record's exception stands for. */
    record Verdict(String outcome, String reason) {
        static Verdict of(@Nullable Exception exception) {
            IdempotentRejectedException rejected = Causes.find(exception, IdempotentRejectedException.class);
            if (rejected != null) {
                return new Verdict("REJECTED", rejected.reason());
            }
            IdempotentRetryLaterException retry = Causes.find(exception, IdempotentRetryLaterException.class);
            if (retry != null) {
                return new Verdict(
                        retry.outcome().type().name(), retry.outcome().reason());
            }
            Throwable root = exception;
            while (root != null && root.getCause() != null && root.getCause() != root) {
                root = root.getCause();
            }
            String outcome = Causes.find(exception, DeadLetterException.class) != null ? "REJECTED" : "FAILED";
            return new Verdict(
                    outcome, root == null ? "unknown" : root.getClass().getName() + ": " + root.getMessage());
        }

        @Override
        public String toString() {
            return outcome + " (" + reason + ")";
        }
    }
}
