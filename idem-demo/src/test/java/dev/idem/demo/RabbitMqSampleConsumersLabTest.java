package dev.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The consumer lab's verdicts on its sample consumers on the local RabbitMQ: the losing and the passing consumer (see
 * {@link SampleConsumerLab}).
 */
class RabbitMqSampleConsumersLabTest extends SampleConsumerLab {
    @Override
    String broker() {
        return "rabbitmq";
    }

    @Test
    void ackBeforeTheEffect_isFoundLosing() throws Exception {
        SampleConsumerLab.Lab lab = judge("CommitFirstConsumer");

        assertThat(lab.status()).as(lab.printed()).isEqualTo(1);
        assertThat(lab.number("lost")).isPositive();
    }

    @Test
    void jdbcInbox_passes() throws Exception {
        SampleConsumerLab.Lab lab = judge("InboxConsumer");

        lab.assertPassedUnderEveryFault();
    }
}
