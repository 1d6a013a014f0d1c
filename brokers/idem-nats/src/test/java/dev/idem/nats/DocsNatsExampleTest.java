package dev.idem.nats;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.Fingerprint;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.testsupport.PaymentBank;
import dev.idem.testsupport.ReadmeSnippets;
import dev.idem.testsupport.TestServers;
import io.nats.client.Connection;
import io.nats.client.JetStreamManagement;
import io.nats.client.Message;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.StreamConfiguration;
import java.nio.file.Path;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The examples of docs/nats.md: they compile, run against the local server and PostgreSQL (the inbox on a pool: a
 * payment stored twice, the second copy published again after the duplicate window, is debited once), and the page
 * shows them verbatim.
 */
class DocsNatsExampleTest {
    private static final Path SOURCE = Path.of("src/test/java/dev/idem/nats/DocsNatsExampleTest.java");
    /** The stream's duplicate window once the producer's example ran: so short that a resend is stored again. */
    private static final Duration SHORT_WINDOW = Duration.ofMillis(100);

    @Test
    void docsNatsExample_compilesRuns_debitsOnceForTwoStoredCopies_andIsShownVerbatim() throws Exception {
        String prefix = TestServers.uniquePrefix("docsnats");
        String stream = prefix.toUpperCase();
        String orders = prefix + ".orders";
        String deadLetters = prefix + "-dlq";
        try (Connection connection = NatsFixture.connect();
                PaymentBank bank = new PaymentBank("DocsNatsExampleTest")) {
            bank.open("alice", 100);
            String jdbcUrl = bank.database().url();
            JdbcInbox.builder(bank.database().dataSource())
                    .namespace("setup")
                    .createTableIfMissing(true)
                    .build();
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
                Message payment = NatsProducers.message(orders, "10086:PAY", "alice:25".getBytes(UTF_8));
                NatsProducers.publish(connection.jetStream(), payment, RetryPolicy.defaults()); // resends on timeout
                connection.jetStream().publish(payment); // same Nats-Msg-Id within the window: not stored again
                // readme:nats-producer end

                assertThat(jsm.getStreamInfo(stream).getStreamState().getMsgCount())
                        .as("the producer's resend within the duplicate window is not stored")
                        .isEqualTo(1);
                resendAfterTheWindow(connection, stream, payment);

                // readme:nats-consumer begin
                HikariDataSource pool = new HikariDataSource(); // a pool: else a connection per message, half speed
                pool.setJdbcUrl(jdbcUrl); // e.g. jdbc:postgresql://127.0.0.1:5432/payments?user=app
                pool.setMaximumPoolSize(4); // one connection per worker (workers(4) below)
                JdbcInbox inbox = JdbcInbox.builder(pool)
                        .namespace("payments") // the durable consumer: every process bound to it shares these marks
                        .build();
                IdempotentNatsConsumer consumer = IdempotentNatsConsumer.builder(connection)
                        .consumer(stream, "payments") // the durable pull consumer above
                        .deadLetterSubject(deadLetters) // REJECTED messages go there with the reason
                        .handler((key, message) -> inbox.handle(
                                Delivery.of(key, Fingerprint.of(message.getData())), // same id, other data: REJECTED
                                sql -> debit(sql, key, message)))
                        .workers(4) // messages handled in parallel
                        .build()
                        .start(); // on shutdown: consumer.close() (it finishes the messages in hand), then pool.close()
                // readme:nats-consumer end

                // both copies delivered and acked: each one final (its transaction committed or found the mark)
                org.awaitility.Awaitility.await()
                        .atMost(NatsFixture.WAIT)
                        .until(() -> jsm.getConsumerInfo(stream, "payments").getNumAckPending() == 0
                                && jsm.getConsumerInfo(stream, "payments").getNumPending() == 0
                                && bank.ledgerRows("alice") >= 1);
                consumer.close();
                pool.close();
                assertThat(jsm.getStreamInfo(stream).getStreamState().getMsgCount())
                        .as("two copies in the stream")
                        .isEqualTo(2);
                assertThat(jsm.getStreamInfo(stream + "_DLQ").getStreamState().getMsgCount())
                        .isZero();
                assertThat(bank.balance("alice")).isEqualTo(75);
                assertThat(bank.ledgerRows("alice")).isEqualTo(1);
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
        ReadmeSnippets.assertShown(SOURCE, "nats-debit");
    }

    /**
     * Shortens the stream's duplicate window and publishes {@code payment} again until the stream stores it: a resend
     * after the window (two minutes by default), which only the guard recognises.
     */
    private static void resendAfterTheWindow(Connection connection, String stream, Message payment) throws Exception {
        JetStreamManagement jsm = connection.jetStreamManagement();
        jsm.updateStream(StreamConfiguration.builder(jsm.getStreamInfo(stream).getConfiguration())
                .duplicateWindow(SHORT_WINDOW)
                .build());
        while (connection.jetStream().publish(payment).isDuplicate()) {
            org.awaitility.Awaitility.await().pollDelay(SHORT_WINDOW).until(() -> true);
        }
    }

    // readme:nats-debit begin
    /** Data {@code <account>:<amount>}; {@code sql} is the inbox's JDBC connection (jnats' Connection is imported). */
    private static Outcome debit(java.sql.Connection sql, String key, Message message) throws SQLException {
        String[] payment = new String(message.getData(), UTF_8).split(":", 2);
        try (PreparedStatement debit = sql.prepareStatement("UPDATE account SET balance = balance - ? WHERE id = ?")) {
            debit.setLong(1, Long.parseLong(payment[1]));
            debit.setString(2, payment[0]);
            debit.executeUpdate(); // on the inbox's connection: one transaction with the dedup mark
        }
        try (PreparedStatement ledger =
                sql.prepareStatement("INSERT INTO ledger (account_id, message_key, amount) VALUES (?, ?, ?)")) {
            ledger.setString(1, payment[0]);
            ledger.setString(2, key);
            ledger.setLong(3, Long.parseLong(payment[1]));
            ledger.executeUpdate();
        }
        return Outcome.processed(); // PROCESSED/DUPLICATE commit; anything else rolls back
    }
    // readme:nats-debit end
}
