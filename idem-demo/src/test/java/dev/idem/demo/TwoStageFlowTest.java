package dev.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;

/** Sending the two-stage run's orders: the topic must hold each customer's orders in their order. */
class TwoStageFlowTest {

    @Test
    void aSendThatFails_isSentAgainBeforeTheNextOrder_soEveryCustomersOrdersStayInTheirOrder() throws Exception {
        TwoStageFlow flow = new TwoStageFlow(TwoStageOptions.parse(new String[] {"--flow", "two-stage"}, Path.of(".")));
        List<String> orders = List.of("o0:c0:1", "o1:c0:2", "o2:c0:3");
        FailingProducer producer = new FailingProducer(1);

        int sentAgain = flow.send(producer, orders, () -> {});

        assertThat(sentAgain).isEqualTo(1);
        assertThat(producer.history())
                .extracting(ProducerRecord::value)
                .as("o0 twice (every 9th order is resent by the application), then o1, o2")
                .containsExactly("o0:c0:1", "o0:c0:1", "o1:c0:2", "o2:c0:3");
    }
}
