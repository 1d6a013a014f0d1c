package dev.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;

/**
 * A lab's sends are never lost silently: the two-stage run once lost both copies of its first order (the producer
 * failed them and nobody looked) and waited for that order until its drain timeout.
 */
class AcknowledgedSendsTest {

    @Test
    void aSendTheProducerReportsFailed_isSentAgain_untilTheBrokerHasIt() throws Exception {
        FailingProducer producer = new FailingProducer(3);
        AcknowledgedSends<String, String> sends = new AcknowledgedSends<>(producer);

        sends.send(new ProducerRecord<>("orders", "c0", "order-0"));
        sends.send(new ProducerRecord<>("orders", "c1", "order-1"));
        int sentAgain = sends.flush();

        assertThat(producer.history())
                .extracting(ProducerRecord::value)
                .containsExactlyInAnyOrder("order-0", "order-1");
        assertThat(sentAgain)
                .as("both failed once, and order-0's first resend failed too")
                .isEqualTo(3);
    }

    @Test
    void aSendThatKeepsFailing_failsTheRun_namingTheCause() {
        AcknowledgedSends<String, String> sends = new AcknowledgedSends<>(new FailingProducer(Integer.MAX_VALUE));

        sends.send(new ProducerRecord<>("orders", "c0", "order-0"));

        assertThatThrownBy(sends::flush)
                .isInstanceOf(ExecutionException.class)
                .hasMessageContaining("did not acknowledge a record for orders in 21 sends")
                .hasMessageContaining("batch expired")
                .hasMessageContaining("proves nothing");
    }
}
