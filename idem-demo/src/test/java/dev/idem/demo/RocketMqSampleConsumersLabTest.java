package dev.idem.demo;

import org.junit.jupiter.api.Test;

/**
 * The consumer lab's verdicts on its sample consumers on the in-process RocketMQ broker: the passing consumer (see
 * {@link SampleConsumerLab}).
 */
class RocketMqSampleConsumersLabTest extends SampleConsumerLab {
    @Override
    String broker() {
        return "rocketmq";
    }

    @Test
    void jdbcInbox_passes() throws Exception {
        SampleConsumerLab.Lab lab = judge("InboxConsumer");

        lab.assertPassedUnderEveryFault();
    }
}
