package dev.idem;

import static org.assertj.core.api.Assertions.assertThat;

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
}
