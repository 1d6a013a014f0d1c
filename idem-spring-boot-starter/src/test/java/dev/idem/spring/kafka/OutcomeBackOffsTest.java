package dev.idem.spring.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.StoreUnavailableException;
import dev.idem.spring.IdempotentRetryLaterException;
import java.time.Duration;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.kafka.listener.ListenerExecutionFailedException;
import org.springframework.util.backoff.BackOffExecution;

class OutcomeBackOffsTest {
    private static final RetryPolicy POLICY = RetryPolicy.builder()
            .initialDelay(Duration.ofMillis(10))
            .maxDelay(Duration.ofMillis(500))
            .maxAttempts(3)
            .jitter(0)
            .build();
    private static final ConsumerRecord<String, String> RECORD = new ConsumerRecord<>("t", 0, 0, "k", "v");
    private final OutcomeBackOffs backOffs = new OutcomeBackOffs(POLICY, Duration.ofMillis(50));

    @Test
    void inProgress_isRetriedWithoutBound_afterTheOutcomesDelay_capped() {
        BackOffExecution held =
                start(IdempotentRetryLaterException.of("payments", Outcome.inProgress("held", Duration.ofMillis(120))));
        for (int i = 0; i < 100; i++) {
            assertThat(held.nextBackOff()).isEqualTo(120);
        }
        BackOffExecution long_ =
                start(IdempotentRetryLaterException.of("payments", Outcome.inProgress("held", Duration.ofMinutes(10))));
        assertThat(long_.nextBackOff()).isEqualTo(500);
        assertThat(start(IdempotentRetryLaterException.of("payments", Outcome.inProgress("held", null)))
                        .nextBackOff())
                .isEqualTo(50);
    }

    @Test
    void storeUnavailable_isRetriedWithoutBound() {
        BackOffExecution down = start(new StoreUnavailableException("redis", "connection refused", null));
        for (int i = 0; i < 100; i++) {
            assertThat(down.nextBackOff()).isEqualTo(50);
        }
    }

    @Test
    void failedOrOutOfOrder_followTheRetryPolicy_thenStop() {
        BackOffExecution failed = start(IdempotentRetryLaterException.of("payments", Outcome.outOfOrder("no row yet")));
        assertThat(failed.nextBackOff()).isEqualTo(10);
        assertThat(failed.nextBackOff()).isEqualTo(20);
        assertThat(failed.nextBackOff()).isEqualTo(BackOffExecution.STOP);
        BackOffExecution own = start(new IllegalStateException("the listener's own failure"));
        own.nextBackOff();
        own.nextBackOff();
        assertThat(own.nextBackOff()).isEqualTo(BackOffExecution.STOP);
    }

    private BackOffExecution start(Exception cause) {
        return backOffs.apply(RECORD, new ListenerExecutionFailedException("listener failed", cause))
                .start();
    }
}
