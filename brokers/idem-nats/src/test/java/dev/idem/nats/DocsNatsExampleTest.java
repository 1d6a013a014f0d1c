package dev.idem.nats;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.RetryPolicy;
import dev.idem.testsupport.ReadmeSnippets;
import dev.idem.testsupport.TestServers;
import io.nats.client.Connection;
import io.nats.client.JetStreamManagement;
import io.nats.client.Message;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.StreamConfiguration;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** The examples of docs/nats.md: they compile, run against the local server, and the page shows them verbatim. */
class DocsNatsExampleTest {
    private static final Path SOURCE = Path.of("src/test/java/dev/idem/nats/DocsNatsExampleTest.java");

    private final List<String> charged = new CopyOnWriteArrayList<>();

    @Test
    void docsNatsExample_compilesRuns_chargesOnce_andIsShownVerbatim() throws Exception {
        String prefix = TestServers.uniquePrefix("docsnats");
        String stream = prefix.toUpperCase();
        String orders = prefix + ".orders";
        String deadLetters = prefix + "-dlq";
        try (Connection connection = NatsFixture.connect()) {
            try {
                // readme:nats-setup begin
                JetStreamManagement jsm = connection.jetStreamManagement();
                jsm.addStream(StreamConfiguration.builder()
                        .name(stream)
                        .subjects(orders)
                        .build());
                jsm.addStream(StreamConfiguration.builder()
                        .name(stream + "_DLQ")
                        .subjects(deadLetters)
                        .build());
                jsm.addOrUpdateConsumer(
                        stream,
                        ConsumerConfiguration.builder()
                                .durable("payments")
                                .ackPolicy(AckPolicy.Explicit) // required: the consumer acks each message itself
                                .ackWait(Duration.ofSeconds(30))
                                .maxDeliver(-1) // required: the consumer's retry policy bounds the retries (see below)
                                .build());
                // readme:nats-setup end

                // readme:nats-producer begin
                Message payment = NatsProducers.message(orders, "10086:PAY", "charge 25".getBytes(UTF_8));
                NatsProducers.publish(connection.jetStream(), payment, RetryPolicy.defaults()); // resends on timeout
                connection.jetStream().publish(payment); // same Nats-Msg-Id within the window: not stored again
                // readme:nats-producer end

                // readme:nats-consumer begin
                Guard guard = Guard.of(InMemoryStore.create(), "payments"); // or a JDBC / Redis store
                IdempotentNatsConsumer consumer = IdempotentNatsConsumer.builder(connection)
                        .consumer(stream, "payments") // the durable pull consumer above
                        .deadLetterSubject(deadLetters) // REJECTED messages go there with the reason
                        .handler((key, message) -> guard.run(key, () -> chargeCustomer(message.getData())))
                        .workers(4) // messages handled in parallel
                        .build()
                        .start(); // consumer.close() on shutdown: finishes the messages in hand
                // readme:nats-consumer end

                org.awaitility.Awaitility.await()
                        .atMost(NatsFixture.WAIT)
                        .until(() ->
                                jsm.getConsumerInfo(stream, "payments").getNumAckPending() == 0 && charged.size() == 1);
                consumer.close();
                assertThat(jsm.getStreamInfo(stream).getStreamState().getMsgCount())
                        .isEqualTo(1);
                assertThat(charged).containsExactly("charge 25");
            } finally {
                for (String name : List.of(stream, stream + "_DLQ")) {
                    try {
                        connection.jetStreamManagement().deleteStream(name);
                    } catch (Exception e) {
                        System.err.println("[idem-nats test] could not delete stream " + name + ": " + e);
                    }
                }
            }
        }
        ReadmeSnippets.assertShown(SOURCE, "nats-setup");
        ReadmeSnippets.assertShown(SOURCE, "nats-producer");
        ReadmeSnippets.assertShown(SOURCE, "nats-consumer");
    }

    private void chargeCustomer(byte[] payment) {
        charged.add(new String(payment, UTF_8));
    }
}
