package dev.idem.rabbitmq;

import static dev.idem.rabbitmq.RabbitFixture.WAIT;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.Fingerprint;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.testsupport.PaymentBank;
import dev.idem.testsupport.ReadmeSnippets;
import dev.idem.testsupport.TestServers;
import java.nio.file.Path;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import org.junit.jupiter.api.Test;

/**
 * The examples of docs/rabbitmq.md: they compile, run against the local RabbitMQ and PostgreSQL (the inbox on a
 * pool: a payment published twice is debited once), and the page shows them verbatim.
 */
class DocsRabbitExampleTest {
    private static final Path SOURCE = Path.of("src/test/java/dev/idem/rabbitmq/DocsRabbitExampleTest.java");

    @Test
    void docsExample_compilesRuns_debitsOnceForTwoCopies_andIsShownVerbatim() throws Exception {
        String amqpUri = TestServers.rabbitmq().url();
        String paymentsQueue = TestServers.uniquePrefix("docs");
        String paymentId = "10086";
        try (PaymentBank bank = new PaymentBank("DocsRabbitExampleTest")) {
            bank.open("alice", 100);
            String jdbcUrl = bank.database().url();
            JdbcInbox.builder(bank.database().dataSource())
                    .namespace("setup")
                    .createTableIfMissing(true)
                    .build();

            // readme:rabbitmq-consumer begin
            ConnectionFactory factory = new ConnectionFactory(); // automatic recovery is on by default
            factory.setUri(amqpUri);
            Connection connection = factory.newConnection();
            RabbitTopology topology = RabbitTopology.forQueue(paymentsQueue); // + .retry, .dlx, .dlq
            try (Channel channel = connection.createChannel()) {
                topology.declare(channel); // or declare it with your deployment tool (see Topology)
            }
            HikariDataSource pool = new HikariDataSource(); // a pool: else a connection per message, half speed
            pool.setJdbcUrl(jdbcUrl); // e.g. jdbc:postgresql://127.0.0.1:5432/payments?user=app
            pool.setMaximumPoolSize(4); // one connection per channel (concurrency(4) below)
            JdbcInbox inbox = JdbcInbox.builder(pool)
                    .namespace("payments") // no consumer group in RabbitMQ: name the handler, the same in every process
                    .build();
            IdempotentRabbitConsumer consumer = IdempotentRabbitConsumer.builder(connection, topology)
                    .keyFrom(KeyExtractor.messageId()) // the default; or header(...), body(...)
                    .handler((key, message) -> inbox.handle(
                            Delivery.of(key, Fingerprint.of(message.getBody())), // same id, other body: REJECTED
                            sql -> debit(sql, message)))
                    .concurrency(4) // channels in parallel, each one in delivery order
                    .prefetch(10)
                    .build()
                    .start(); // close on shutdown: consumer.close(), then pool.close(), then connection.close()
            // readme:rabbitmq-consumer end

            // readme:rabbitmq-publisher begin
            try (RabbitPublisher publisher = RabbitPublisher.builder(factory).build()) {
                byte[] body = "alice:25".getBytes(UTF_8);
                publisher.publish("", paymentsQueue, paymentId + ":PAY", body); // message-id fixed before 1st publish
                publisher.publish("", paymentsQueue, paymentId + ":PAY", body); // a resend: recognised as the same
            }
            // readme:rabbitmq-publisher end

            try (RabbitFixture.Queues queues = new RabbitFixture.Queues(topology)) {
                await().atMost(WAIT).until(() -> queues.depth(paymentsQueue) == 0 && bank.ledgerRows("alice") == 1);
                consumer.close();
                pool.close();
                connection.close();
            }
            assertThat(bank.balance("alice")).isEqualTo(75);
            assertThat(bank.ledgerRows("alice")).isEqualTo(1);
        }
        ReadmeSnippets.assertShown(SOURCE, "rabbitmq-consumer");
        ReadmeSnippets.assertShown(SOURCE, "rabbitmq-debit");
        ReadmeSnippets.assertShown(SOURCE, "rabbitmq-publisher");
    }

    // readme:rabbitmq-debit begin
    /** Body {@code <account>:<amount>}; {@code message} is amqp-client's Delivery, {@code dev.idem.Delivery} is imported. */
    private static Outcome debit(java.sql.Connection sql, com.rabbitmq.client.Delivery message) throws SQLException {
        String[] payment = new String(message.getBody(), UTF_8).split(":", 2);
        try (PreparedStatement debit = sql.prepareStatement("UPDATE account SET balance = balance - ? WHERE id = ?")) {
            debit.setLong(1, Long.parseLong(payment[1]));
            debit.setString(2, payment[0]);
            debit.executeUpdate(); // on the inbox's connection: one transaction with the dedup mark
        }
        try (PreparedStatement ledger =
                sql.prepareStatement("INSERT INTO ledger (account_id, message_key, amount) VALUES (?, ?, ?)")) {
            ledger.setString(1, payment[0]);
            ledger.setString(2, message.getProperties().getMessageId());
            ledger.setLong(3, Long.parseLong(payment[1]));
            ledger.executeUpdate();
        }
        return Outcome.processed(); // PROCESSED/DUPLICATE commit; anything else rolls back
    }
    // readme:rabbitmq-debit end
}
