package dev.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The consumer lab's verdicts on its sample consumers on the local NATS JetStream server (skipped without one, failed
 * with {@code IDEM_REQUIRE_SERVICES=1}): the doubling and the passing consumer (see {@link SampleConsumerLab}). The
 * losing and the check-then-act verdicts are proven on Kafka, the losing one on RabbitMQ too: every sample reads NATS
 * through the same {@code PaymentSource}, which these two runs exercise.
 */
class NatsSampleConsumersLabTest extends SampleConsumerLab {
    @Override
    String broker() {
        return "nats";
    }

    @Test
    void noDedup_isFoundDoubleCharging() throws Exception {
        SampleConsumerLab.Lab lab = judge("NoDedupConsumer");

        assertThat(lab.status()).as(lab.printed()).isEqualTo(1);
        assertThat(lab.number("double")).isPositive();
    }

    @Test
    void jdbcInbox_passes() throws Exception {
        SampleConsumerLab.Lab lab = judge("InboxConsumer");

        lab.assertPassedUnderEveryFault();
    }
}
