package dev.idem.spring.kafka;

import dev.idem.Outcome;
import dev.idem.spi.Attempts;
import dev.idem.spi.DeliveryDecision;
import dev.idem.spi.Verdict;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;
import org.springframework.kafka.listener.ErrorHandlingUtils;
import org.springframework.util.backoff.BackOff;
import org.springframework.util.backoff.BackOffExecution;

/**
 * The back-off of one failed record, as the {@link DeliveryDecision} decides it at each failed delivery from the
 * exception of that delivery: a {@link Verdict.Retry} waits its delay (an uncounted wait has no bound), a {@link
 * Verdict.DeadLetter} stops, so that spring-kafka hands the record to the recoverer. The execution carries the record's
 * {@link Attempts} from one delivery to the next.
 */
final class VerdictBackOff implements BackOff {
    private final DeliveryDecision decision;
    private final HandledFailure failure;
    private final @Nullable ConsumerRecord<?, ?> record;
    private final KafkaEvents events;

    /**
     * @param failure the exception of the delivery being decided (spring-kafka hands the back-off none); told the
     *     dead-letter verdict
     * @param record the failed record, for the events; null for a whole batch
     */
    VerdictBackOff(
            DeliveryDecision decision,
            HandledFailure failure,
            @Nullable ConsumerRecord<?, ?> record,
            KafkaEvents events) {
        this.decision = decision;
        this.failure = failure;
        this.record = record;
        this.events = events;
    }

    @Override
    public BackOffExecution start() {
        return new BackOffExecution() {
            private Attempts attempts = Attempts.NONE;
            private int deliveries;

            @Override
            public long nextBackOff() {
                deliveries++;
                Exception e = ErrorHandlingUtils.findRootCause(failure.exception()); // the listener's own
                Verdict verdict = e == null
                        ? decision.decide(Outcome.failed("the delivery failed without an exception", null), attempts)
                        : decision.decide(e, attempts);
                if (verdict instanceof Verdict.Retry retry) {
                    attempts = retry.attempts();
                    if (record != null) {
                        events.retryScheduled(record, e, retry, deliveries);
                    }
                    return retry.delay().toMillis();
                }
                if (verdict instanceof Verdict.DeadLetter dead) {
                    attempts = dead.attempts();
                    failure.deadLettered(dead.outcome());
                    return STOP;
                }
                return 0; // an exception that carries a final outcome: deliver it again, the guard answers it
            }
        };
    }
}
