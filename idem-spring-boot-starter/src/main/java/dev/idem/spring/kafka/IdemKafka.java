package dev.idem.spring.kafka;

import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.spring.SpringFailures;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.jspecify.annotations.Nullable;
import org.springframework.kafka.core.KafkaOperations;
import org.springframework.kafka.listener.ConsumerRecordRecoverer;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.ErrorHandlingUtils;

/**
 * spring-kafka's stock error handling, set up for {@code @Idempotent} listeners. The starter sets {@link
 * #errorHandler} on every Kafka listener container factory that has no error handler; call these yourself when you
 * build your own.
 */
public final class IdemKafka {
    /** Header of a dead-lettered record: the outcome that sent it there ({@code REJECTED}, {@code FAILED}, ...). */
    public static final String OUTCOME_HEADER = "idem-outcome";
    /** Header of a dead-lettered record: why, as the guard or the exception said it. */
    public static final String REASON_HEADER = "idem-reason";

    private IdemKafka() {}

    /**
     * A {@link DefaultErrorHandler} that decides each failed delivery with Idem's one delivery decision ({@link
     * SpringFailures#decision}) and never acks a record unprocessed: {@code IN_PROGRESS} ({@link
     * dev.idem.spring.InProgressException}) and a database or store that cannot be reached are retried without an
     * attempt bound; {@code OUT_OF_ORDER}, {@code FAILED} and the listener's own exceptions follow {@code policy}
     * (never later than the outcome's own delay) and then go to {@code recoverer}; {@code REJECTED} goes to {@code
     * recoverer} at once. Do not replace its back-off function, classifications or retry listeners.
     *
     * @param recoverer where exhausted and rejected records go, e.g. {@link #deadLetters}, or {@link #keepRetrying()}
     * @param listener told of every retry ({@code RETRY_SCHEDULED}) and dead letter ({@code DEAD_LETTERED})
     */
    public static DefaultErrorHandler errorHandler(
            ConsumerRecordRecoverer recoverer, RetryPolicy policy, IdempotencyListener listener) {
        return VerdictErrorHandler.of(recoverer, SpringFailures.decision(policy), listener);
    }

    /** Whether {@code handler} is one {@link #errorHandler} made. */
    static boolean isIdems(@Nullable Object handler) {
        return handler instanceof VerdictErrorHandler;
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
            Outcome outcome = outcomeOf(exception);
            throw new IllegalStateException("record " + record.topic() + "-" + record.partition() + "@"
                    + record.offset() + " ended " + outcome.type() + " (" + outcome.reason()
                    + ") and there is no dead-letter topic: it is kept and retried; declare a KafkaTemplate and set"
                    + " idem.kafka.dead-letter=true to park it instead");
        };
    }

    static Headers reasonHeaders(@Nullable Exception exception) {
        Outcome outcome = outcomeOf(exception);
        RecordHeaders headers = new RecordHeaders();
        headers.add(OUTCOME_HEADER, outcome.type().name().getBytes(StandardCharsets.UTF_8));
        headers.add(REASON_HEADER, outcome.reason().getBytes(StandardCharsets.UTF_8));
        return headers;
    }

    /**
     * The outcome a failed record's exception stands for: the decision's dead-letter outcome it carries, else its
     * classification, read past spring-kafka's wrapper of the listener's own.
     */
    private static Outcome outcomeOf(@Nullable Exception exception) {
        if (exception instanceof DeadLetteredException dead) {
            return dead.outcome();
        }
        Exception own = ErrorHandlingUtils.findRootCause(exception);
        return own == null
                ? Outcome.failed("failed without an exception", null)
                : SpringFailures.classifier().classify(own);
    }
}
