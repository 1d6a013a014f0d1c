package dev.idem;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class DeliveryTest {

    @Test
    void equalDeliveries_areEqual_andToStringNeverShowsTheKey() {
        Delivery d = Delivery.of("customer-4711-card-4242", "fp");

        assertThat(d).isEqualTo(Delivery.of("customer-4711-card-4242", "fp")).isNotEqualTo(Delivery.of("other"));
        assertThat(d.hashCode())
                .isEqualTo(Delivery.of("customer-4711-card-4242", "fp").hashCode());
        assertThat(d.toString()).doesNotContain("4711").doesNotContain("4242");
        assertThat(Delivery.of("k").fingerprint()).isNull();
    }
}
