package dev.idem.spi;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.StoreUnavailableException;
import java.sql.SQLException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class DeliveryDecisionTest {
    private static final RetryPolicy POLICY = RetryPolicy.builder()
            .initialDelay(Duration.ofMillis(100))
            .maxDelay(Duration.ofSeconds(10))
            .jitter(0)
            .maxAttempts(3)
            .build();
    private final DeliveryDecision decision = DeliveryDecision.of(POLICY);

    @Test
    void processedAndDuplicate_areAcked() {
        assertThat(decision.decide(Outcome.processed(), Attempts.NONE)).isInstanceOf(Verdict.Ack.class);
        assertThat(decision.decide(Outcome.duplicate("seen"), new Attempts(2, 7)))
                .isInstanceOf(Verdict.Ack.class);
    }

    @Test
    void rejected_isDeadLetteredAtOnce_withItsReason() {
        Verdict verdict = decision.decide(Outcome.rejected("no key"), Attempts.NONE);

        assertThat(verdict)
                .isInstanceOfSatisfying(
                        Verdict.DeadLetter.class, d -> assertThat(d.reason()).isEqualTo("no key"));
    }

    @Test
    void failed_isCountedAndBackedOff_thenDeadLetteredAtTheBound() {
        Verdict first = decision.decide(Outcome.failed("boom", null), Attempts.NONE);
        assertThat(first)
                .isEqualTo(new Verdict.Retry(
                        Outcome.failed("boom", null), Duration.ofMillis(100), true, new Attempts(1, 0)));

        Verdict second = decision.decide(Outcome.outOfOrder("no order yet"), new Attempts(1, 0));
        assertThat(second).isInstanceOfSatisfying(Verdict.Retry.class, r -> {
            assertThat(r.delay()).isEqualTo(Duration.ofMillis(200));
            assertThat(r.attempts()).isEqualTo(new Attempts(2, 0));
        });

        Verdict third = decision.decide(Outcome.failed("boom", null), new Attempts(2, 0));
        assertThat(third).isInstanceOfSatisfying(Verdict.DeadLetter.class, d -> {
            assertThat(d.reason()).isEqualTo("gave up after 3 attempts; last: boom");
            assertThat(d.attempts()).isEqualTo(new Attempts(3, 0));
        });
    }

    @Test
    void inProgress_farBeyondTheBound_isAnUncountedWait_neverDeadLettered() {
        Verdict verdict = decision.decide(Outcome.inProgress("held", null), new Attempts(2, 1_000_000));

        assertThat(verdict).isInstanceOfSatisfying(Verdict.Retry.class, r -> {
            assertThat(r.counted()).isFalse();
            assertThat(r.delay()).isEqualTo(Duration.ofSeconds(10));
            assertThat(r.attempts()).isEqualTo(new Attempts(2, 1_000_001));
        });
    }

    @Test
    void aWait_growsItsOwnBackOff_andAFailureAfterItStartsTheWaitsAgain() {
        Verdict wait = decision.decide(Outcome.inProgress("held", null), new Attempts(0, 3));
        assertThat(((Verdict.Retry) wait).delay()).isEqualTo(Duration.ofMillis(800));

        Verdict failure = decision.decide(Outcome.failed("boom", null), new Attempts(0, 4));
        assertThat(((Verdict.Retry) failure).attempts()).isEqualTo(new Attempts(1, 0));
    }

    @Test
    void theOutcomesOwnRetryAfter_shortensTheBackOff_butNeverLengthensIt() {
        Verdict shorter = decision.decide(Outcome.inProgress("held", Duration.ofMillis(30)), new Attempts(0, 5));
        Verdict longer = decision.decide(Outcome.inProgress("held", Duration.ofMinutes(5)), Attempts.NONE);

        assertThat(((Verdict.Retry) shorter).delay()).isEqualTo(Duration.ofMillis(30));
        assertThat(((Verdict.Retry) longer).delay()).isEqualTo(Duration.ofMillis(100));
    }

    /** A retry-after already past (a lease end computed a moment late) means at once, never a negative delay. */
    @Test
    void aRetryAfterInThePast_isNoDelay() {
        Verdict past = decision.decide(Outcome.inProgress("held", Duration.ofMillis(-5)), Attempts.NONE);

        assertThat(((Verdict.Retry) past).delay()).isEqualTo(Duration.ZERO);
    }

    @Test
    void failedBecauseTheDatabaseIsUnreachable_isAWait_evenAtTheBound() {
        Outcome failed = Outcome.failed("handler threw", new SQLException("Connection is closed", "08003"));

        Verdict verdict = decision.decide(failed, new Attempts(2, 0));

        assertThat(verdict).isInstanceOfSatisfying(Verdict.Retry.class, r -> {
            assertThat(r.counted()).isFalse();
            assertThat(r.outcome().type()).isEqualTo(Outcome.Type.IN_PROGRESS);
            assertThat(r.outcome().reason()).contains("unreachable").contains("Connection is closed");
        });
    }

    @Test
    void aThrownException_isClassifiedThenDecided() {
        Verdict down = decision.decide(new StoreUnavailableException("redis", "down", null), new Attempts(2, 0));
        Verdict failed = decision.decide(new IllegalStateException("bug"), new Attempts(2, 0));

        assertThat(down)
                .isInstanceOfSatisfying(
                        Verdict.Retry.class, r -> assertThat(r.counted()).isFalse());
        assertThat(failed)
                .isInstanceOfSatisfying(
                        Verdict.DeadLetter.class,
                        d -> assertThat(d.reason())
                                .isEqualTo(
                                        "gave up after 3 attempts; last: handler threw java.lang.IllegalStateException: bug"));
    }
}
