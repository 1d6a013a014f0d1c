package dev.idem.nats;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class SubjectsTest {
    @Test
    void literalsStarsAndTails() {
        assertThat(Subjects.matches("orders.paid", "orders.paid")).isTrue();
        assertThat(Subjects.matches("orders.paid", "orders.paid.eu")).isFalse();
        assertThat(Subjects.matches("orders.*", "orders.paid")).isTrue();
        assertThat(Subjects.matches("orders.*", "orders.paid.eu")).isFalse();
        assertThat(Subjects.matches("orders.>", "orders.paid.eu")).isTrue();
        assertThat(Subjects.matches("orders.>", "orders")).isFalse();
        assertThat(Subjects.matches("*.dlq", "payments.dlq")).isTrue();
        assertThat(Subjects.matches(">", "dlq")).isTrue();
        assertThat(Subjects.matches("orders", "orders-dlq")).isFalse();
    }
}
