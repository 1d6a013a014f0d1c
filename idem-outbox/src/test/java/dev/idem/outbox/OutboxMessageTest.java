package dev.idem.outbox;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class OutboxMessageTest {
    /**
     * A handler that copies the incoming message's headers onto the one it sends would carry the upstream id where the
     * publishers carry the outbox's message id: Kafka's publisher then fails every publish of it (retried for ever,
     * never parked), and JetStream's stream drops the second message sent with one copied Nats-Msg-Id as a duplicate.
     */
    @ParameterizedTest
    @ValueSource(strings = {"idem-key", "IDEM-KEY", "Nats-Msg-Id", "nats-msg-id"})
    void aHeaderWhereThePublishersCarryTheMessageId_isRefused_withTheFix(String name) {
        var draft = OutboxMessage.to("payments").key("order-1");

        assertThatThrownBy(() -> draft.header(name, "OUTBOX_UPSTREAM_ID"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(name)
                .hasMessageContaining("message id")
                .hasMessageContaining("withMessageId");
    }
}
