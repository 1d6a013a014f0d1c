package dev.idem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class OutcomeTest {

    @Test
    void deadLetterException_isRejected_withItsMessage() {
        Outcome outcome = Outcome.ofException(new DeadLetterException("amount is negative", null));

        assertThat(outcome.type()).isEqualTo(Outcome.Type.REJECTED);
        assertThat(outcome.action()).isEqualTo(Outcome.Action.DEAD_LETTER);
        assertThat(outcome.reason()).isEqualTo("amount is negative");
    }

    @Test
    void otherException_isFailed_namingIt_andRetried() {
        Outcome outcome = Outcome.ofException(new IllegalStateException("gateway timed out"));

        assertThat(outcome.type()).isEqualTo(Outcome.Type.FAILED);
        assertThat(outcome.action()).isEqualTo(Outcome.Action.RETRY);
        assertThat(outcome.reason()).contains("IllegalStateException", "gateway timed out");
        assertThat(outcome.cause()).containsInstanceOf(IllegalStateException.class);
    }

    @Test
    void interruption_isFailed_andKeepsTheThreadInterrupted() {
        try {
            Outcome outcome = Outcome.ofException(new InterruptedException());

            assertThat(outcome.type()).isEqualTo(Outcome.Type.FAILED);
            assertThat(Thread.currentThread().isInterrupted()).isTrue();
        } finally {
            Thread.interrupted();
        }
    }

    @Test
    void completionRecorded_isNotedForItsOwnerOnly_keptByAnotherReason_andOnlyOnAFinalOutcome() {
        HandlingContext context = HandlingContext.of(
                IdempotencyKey.of("payments", "pay-1"), Delivery.of("pay-1"), 0, "owner-a", 1, false);

        Outcome noted = Outcome.processed().withCompletionRecorded(context).withReason("applied, receipt 7");

        assertThat(noted.completionRecordedFor("owner-a")).isTrue();
        assertThat(noted.completionRecordedFor("owner-b")).isFalse();
        assertThat(Outcome.processed().completionRecordedFor("owner-a")).isFalse();
        assertThat(noted).isEqualTo(Outcome.processed("applied, receipt 7"));
        assertThatThrownBy(() -> Outcome.failed("gateway timed out", null).withCompletionRecorded(context))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("only a final outcome");
    }
}
