package dev.idem.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.ConfigurationException;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class ServerSettingsTest {
    private static final ConsumerConfiguration EXPLICIT = ConsumerConfiguration.builder()
            .durable("payments")
            .ackPolicy(AckPolicy.Explicit)
            .ackWait(Duration.ofSeconds(30))
            .build();

    @Test
    void explicitAcks_inProgressEveryThirdOfAckWait_noWarnings() {
        ServerSettings s = check(EXPLICIT, null);
        assertThat(s.progressEvery()).isEqualTo(Duration.ofSeconds(10));
        assertThat(s.warnings()).isEmpty();
    }

    @Test
    void ackNoneOrAll_refused_withTheFix() {
        for (AckPolicy policy : List.of(AckPolicy.None, AckPolicy.All)) {
            ConsumerConfiguration consumer =
                    ConsumerConfiguration.builder(EXPLICIT).ackPolicy(policy).build();
            assertThatThrownBy(() -> check(consumer, null))
                    .isInstanceOf(ConfigurationException.class)
                    .hasMessageContaining("AckPolicy " + policy.name())
                    .hasMessageContaining("AckPolicy.Explicit");
        }
    }

    @Test
    void deadLetterSubjectWithoutStream_refused() {
        assertThatThrownBy(() -> ServerSettings.check(
                        "ORDERS", "payments", EXPLICIT, List.of("orders.>"), "dlq.payments", List.of(), null))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("no stream captures the dead-letter subject dlq.payments");
    }

    @Test
    void deadLetterSubjectDeliveredBackToThisConsumer_refused_butAllowedOutsideItsFilter() {
        assertThatThrownBy(() -> ServerSettings.check(
                        "ORDERS", "payments", EXPLICIT, List.of("orders.>"), "orders.dlq", List.of("ORDERS"), null))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("would come back to the handler");
        ConsumerConfiguration filtered = ConsumerConfiguration.builder(EXPLICIT)
                .filterSubject("orders.paid")
                .build();
        assertThat(ServerSettings.check(
                                "ORDERS",
                                "payments",
                                filtered,
                                List.of("orders.>"),
                                "orders.dlq",
                                List.of("ORDERS"),
                                null)
                        .warnings())
                .isEmpty();
    }

    @Test
    void guardLeaseShorterThanAckWait_warned_longerOrEqual_not() {
        assertThat(check(EXPLICIT, Duration.ofSeconds(10)).warnings())
                .singleElement()
                .asString()
                .contains("lease (PT10S) is shorter than the AckWait");
        assertThat(check(EXPLICIT, Duration.ofSeconds(30)).warnings()).isEmpty();
        assertThat(check(EXPLICIT, Duration.ofMinutes(5)).warnings()).isEmpty();
    }

    private static ServerSettings check(ConsumerConfiguration consumer, Duration guardLease) {
        return ServerSettings.check(
                "ORDERS", "payments", consumer, List.of("orders.>"), "dlq.payments", List.of("DLQ"), guardLease);
    }
}
