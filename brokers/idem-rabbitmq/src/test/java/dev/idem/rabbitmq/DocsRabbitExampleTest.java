package dev.idem.rabbitmq;

import static dev.idem.rabbitmq.RabbitFixture.WAIT;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.testsupport.ReadmeSnippets;
import dev.idem.testsupport.TestServers;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** The examples of docs/rabbitmq.md: they compile, run against the local server, and the page shows them verbatim. */
class DocsRabbitExampleTest {
    private static final Path SOURCE = Path.of("src/test/java/dev/idem/rabbitmq/DocsRabbitExampleTest.java");

    private final List<String> charged = new CopyOnWriteArrayList<>();

    @Test
    void docsExample_compilesRuns_chargesOnceForTwoCopies_andIsShownVerbatim() throws Exception {
        String amqpUri = TestServers.rabbitmq().url();
        String paymentsQueue = TestServers.uniquePrefix("docs");
        String paymentId = "10086";

        // readme:rabbitmq-consumer begin
        ConnectionFactory factory = new ConnectionFactory(); // automatic recovery is on by default
        factory.setUri(amqpUri);
        Connection connection = factory.newConnection();
        RabbitTopology topology = RabbitTopology.forQueue(paymentsQueue); // + .retry, .dlx, .dlq
        try (Channel channel = connection.createChannel()) {
            topology.declare(channel); // or declare it with your deployment tool (see Topology)
        }
        Guard guard = Guard.of(InMemoryStore.create(), "payments"); // or a JDBC / Redis store
        IdempotentRabbitConsumer consumer = IdempotentRabbitConsumer.builder(connection, topology)
                .keyFrom(KeyExtractor.messageId()) // the default; or header(...), body(...)
                .handler((key, message) -> guard.run(key, () -> chargeCustomer(message.getBody())))
                .concurrency(4) // channels in parallel, each one in delivery order
                .prefetch(10)
                .build()
                .start(); // consumer.close() on shutdown: finishes the messages in hand
        // readme:rabbitmq-consumer end

        // readme:rabbitmq-publisher begin
        try (RabbitPublisher publisher = RabbitPublisher.builder(factory).build()) {
            byte[] body = "charge 25".getBytes(UTF_8);
            publisher.publish("", paymentsQueue, paymentId + ":PAY", body); // message-id fixed before the 1st publish
            publisher.publish("", paymentsQueue, paymentId + ":PAY", body); // a resend: recognised as the same
        }
        // readme:rabbitmq-publisher end

        try (RabbitFixture.Queues queues = new RabbitFixture.Queues(topology)) {
            await().atMost(WAIT).until(() -> queues.depth(paymentsQueue) == 0 && charged.size() == 1);
            consumer.close();
            connection.close();
        }
        assertThat(charged).containsExactly("charge 25");
        ReadmeSnippets.assertShown(SOURCE, "rabbitmq-consumer");
        ReadmeSnippets.assertShown(SOURCE, "rabbitmq-publisher");
    }

    private void chargeCustomer(byte[] payment) {
        charged.add(new String(payment, UTF_8));
    }
}
