package dev.idem.spring.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DeadLetterException;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import dev.idem.RetryLaterException;
import dev.idem.RetryPolicy;
import dev.idem.StoreUnavailableException;
import dev.idem.spring.IdempotentRetryLaterException;
import dev.idem.spring.SpringFailures;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.kafka.listener.ListenerExecutionFailedException;
import org.springframework.transaction.CannotCreateTransactionException;
import org.springframework.transaction.TransactionSystemException;
import org.springframework.util.backoff.BackOff;
import org.springframework.util.backoff.BackOffExecution;

/** The back-off of a failed record, as the delivery decision answers each failed delivery's exception. */
class VerdictBackOffTest {
    private static final RetryPolicy POLICY = RetryPolicy.builder()
            .initialDelay(Duration.ofMillis(10))
            .maxDelay(Duration.ofMillis(500))
            .maxAttempts(3)
            .jitter(0)
            .build();
    private static final ConsumerRecord<String, String> RECORD = new ConsumerRecord<>("t", 0, 0, "k", "v");

    private final HandledFailure failure = new HandledFailure();
    private final AtomicReference<Exception> thrown = new AtomicReference<>();
    private final BackOff backOff = new VerdictBackOff(
            SpringFailures.decision(POLICY),
            failure,
            RECORD,
            new KafkaEvents(IdempotencyListener.NONE, SpringFailures.classifier(), failure));
    private final BackOffExecution started = backOff.start();
    /** The execution, each call made while this test's exception is the thread's failure. */
    private final BackOffExecution execution = () -> failure.during(thrown.get(), started::nextBackOff);

    @Test
    void inProgress_isRetriedWithoutBound_neverLaterThanTheOutcomesDelay_capped() {
        failWith(IdempotentRetryLaterException.of("payments", Outcome.inProgress("held", Duration.ofMillis(120))));
        for (int i = 0; i < 100; i++) {
            assertThat(execution.nextBackOff()).isBetween(1L, 120L);
        }
        failWith(IdempotentRetryLaterException.of("payments", Outcome.inProgress("held", Duration.ofMinutes(10))));
        assertThat(execution.nextBackOff()).isEqualTo(500);
    }

    @Test
    void storeUnavailable_isRetriedWithoutBound() {
        failWith(new StoreUnavailableException("redis", "connection refused", null));
        for (int i = 0; i < 100; i++) {
            assertThat(execution.nextBackOff()).isNotEqualTo(BackOffExecution.STOP);
        }
    }

    @Test
    void aTransactionThatCannotBegin_isRetriedWithoutBound() {
        failWith(new CannotCreateTransactionException("Could not open JDBC Connection for transaction"));
        for (int i = 0; i < 100; i++) {
            assertThat(execution.nextBackOff()).isNotEqualTo(BackOffExecution.STOP);
        }
    }

    @Test
    void aRollbackThatFailed_isClassifiedByTheExceptionItReplaced() {
        TransactionSystemException rollback = new TransactionSystemException("JDBC rollback failed");
        rollback.initApplicationException(new RetryLaterException("the database ended the caller's transaction", null));
        failWith(rollback);
        for (int i = 0; i < 100; i++) {
            assertThat(execution.nextBackOff()).isNotEqualTo(BackOffExecution.STOP);
        }
    }

    @Test
    void failedOrOutOfOrder_followTheRetryPolicy_thenStop() {
        failWith(IdempotentRetryLaterException.of("payments", Outcome.outOfOrder("no row yet")));
        assertThat(execution.nextBackOff()).isEqualTo(10);
        assertThat(execution.nextBackOff()).isEqualTo(20);
        assertThat(execution.nextBackOff()).isEqualTo(BackOffExecution.STOP);
    }

    @Test
    void theListenersOwnFailure_followsTheRetryPolicy_thenStops() {
        failWith(new IllegalStateException("the listener's own failure"));
        execution.nextBackOff();
        execution.nextBackOff();
        assertThat(execution.nextBackOff()).isEqualTo(BackOffExecution.STOP);
    }

    @Test
    void aRejection_stopsAtOnce() {
        failWith(new DeadLetterException("no key", null));
        assertThat(execution.nextBackOff()).isEqualTo(BackOffExecution.STOP);
    }

    @Test
    void waitsBetweenFailures_keepTheFailureCount_andAreNeverCounted() {
        failWith(new IllegalStateException("the listener's own failure"));
        assertThat(execution.nextBackOff()).isNotEqualTo(BackOffExecution.STOP);
        failWith(new CannotCreateTransactionException("the database is down"));
        for (int i = 0; i < 20; i++) {
            assertThat(execution.nextBackOff()).isNotEqualTo(BackOffExecution.STOP);
        }
        failWith(new IllegalStateException("the listener's own failure"));
        assertThat(execution.nextBackOff()).isNotEqualTo(BackOffExecution.STOP);
        assertThat(execution.nextBackOff()).as("the third failure").isEqualTo(BackOffExecution.STOP);
    }

    private void failWith(Exception cause) {
        thrown.set(new ListenerExecutionFailedException("listener failed", cause));
    }
}
