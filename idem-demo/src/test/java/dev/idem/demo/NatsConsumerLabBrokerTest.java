package dev.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.testsupport.TestServers;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.api.PublishAck;
import io.nats.client.impl.NatsMessage;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * The NATS consumer lab's sends on the local JetStream server when a publish ack does not come: on a loaded machine
 * the client cancels the ack's future after its request timeout (a CI run failed with "Future cancelled, response not
 * registered in time"), whether or not the stream stored the copy.
 */
class NatsConsumerLabBrokerTest {

    @Test
    void copiesWhoseAckNeverCame_arePublishedAgain_andEachStoredOnce() throws Exception {
        String url = TestServers.nats().url();
        try (NatsConsumerLabBroker broker = new NatsConsumerLabBroker(url, TestServers.uniquePrefix("natsack"));
                Connection other = Nats.connect(url)) {
            broker.prepare();
            NatsMessage stored = broker.message(send("pay-stored"));
            NatsMessage neverSent = broker.message(send("pay-never-sent"));
            other.jetStream().publish(stored); // it reached the stream, its ack did not reach the lab

            broker.track(stored, cancelled());
            broker.track(neverSent, cancelled());
            broker.flush();

            assertThat(broker.backlog()).as("copies in the stream").isEqualTo(2);
        }
    }

    private static PaymentWorkload.Send send(String paymentId) {
        return new PaymentWorkload.Send(
                0, new PaymentWorkload.Payment(paymentId, "acc-1", 100), PaymentWorkload.Copy.ORIGINAL);
    }

    private static CompletableFuture<PublishAck> cancelled() {
        CompletableFuture<PublishAck> ack = new CompletableFuture<>();
        ack.cancel(false);
        return ack;
    }
}
