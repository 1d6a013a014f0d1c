package dev.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The consumer lab's verdicts on its sample consumers on the local NATS JetStream server (skipped without one, failed
 * with {@code IDEM_REQUIRE_SERVICES=1}) (see {@link SampleConsumerLab}).
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
    void ackBeforeTheEffect_isFoundLosing() throws Exception {
        SampleConsumerLab.Lab lab = judge("CommitFirstConsumer");

        assertThat(lab.status()).as(lab.printed()).isEqualTo(1);
        assertThat(lab.number("lost")).isPositive();
    }

    @Test
    void checkThenAct_isFoundDoubleCharging_onlyWhereTwoConsumersGotTheSamePayment() throws Exception {
        SampleConsumerLab.Lab lab = judge("CheckThenActConsumer");

        assertThat(lab.status()).as(lab.printed()).isEqualTo(1);
        lab.assertDoublesOnlyFromSimultaneousCopies();
    }

    @Test
    void jdbcInbox_passes() throws Exception {
        SampleConsumerLab.Lab lab = judge("InboxConsumer");

        lab.assertPassedUnderEveryFault();
    }
}
