package dev.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.Fingerprint;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.testsupport.PaymentBank;
import dev.idem.testsupport.ReadmeSnippets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/**
 * The examples of README.md and docs/kafka.md: they compile, run against the in-process broker and PostgreSQL (the
 * inbox on a pool: a payment sent twice is debited once), and the pages show them verbatim.
 */
class ReadmeKafkaExampleTest {
    private static final Path SOURCE = Path.of("src/test/java/dev/idem/kafka/ReadmeKafkaExampleTest.java");

    @Test
    void docsKafkaExample_compilesRuns_debitsOnceForTwoCopies_andIsShownVerbatim() throws Exception {
        String bootstrap = KafkaFixture.kafka().bootstrapServers();
        String paymentsTopic = KafkaFixture.topic("docs", 1);
        String group = paymentsTopic + "-group";
        String paymentId = "10086";
        try (PaymentBank bank = new PaymentBank("ReadmeKafkaExampleTest")) {
            bank.open("alice", 100);
            String jdbcUrl = bank.database().url();
            JdbcInbox.builder(bank.database().dataSource())
                    .namespace("setup")
                    .createTableIfMissing(true)
                    .build();

            // readme:kafka-producer begin
            Map<String, Object> settings = new HashMap<>(KafkaProducers.recommendedSettings()); // idempotence, acks=all
            settings.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            try (var producer = new KafkaProducer<>(settings, new StringSerializer(), new StringSerializer())) {
                ProducerRecord<String, String> record = new ProducerRecord<>(paymentsTopic, "alice:25");
                KafkaProducers.withKey(record, paymentId + ":PAY");
                producer.send(record); // the key is fixed before the first send ...
                producer.send(record); // ... so a resend is recognised as the same message
            }
            // readme:kafka-producer end

            // readme:kafka-consumer begin
            HikariDataSource pool = new HikariDataSource(); // a pool: else a connection per record, half speed
            pool.setJdbcUrl(jdbcUrl); // e.g. jdbc:postgresql://127.0.0.1:5432/payments?user=app
            pool.setMaximumPoolSize(4); // one connection per worker (workers(4) below)
            JdbcInbox inbox = JdbcInbox.builder(pool)
                    .namespace(group) // the consumer group: every process of the group shares these marks
                    .build();
            var consumer = IdempotentKafkaConsumer.builder(
                            Map.of("bootstrap.servers", bootstrap, "group.id", group, "auto.offset.reset", "earliest"))
                    .topics(paymentsTopic) // dead letters go to <topic>-dlt, checked at start()
                    .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                    .handler((key, record) -> inbox.handle(
                            Delivery.of(key, Fingerprint.of(record.value())), // same key, other value: REJECTED
                            connection -> debit(connection, key, record.value())))
                    .workers(4) // partitions in parallel, order kept within each
                    .build()
                    .start(); // on shutdown: consumer.close() (it finishes and commits), then pool.close()
            // readme:kafka-consumer end

            KafkaFixture.awaitAllCommitted(group, paymentsTopic);
            consumer.close();
            pool.close();
            assertThat(KafkaFixture.readAll(paymentsTopic))
                    .as("two copies in the topic")
                    .hasSize(2);
            assertThat(KafkaFixture.readAll(paymentsTopic + "-dlt")).isEmpty();
            assertThat(bank.balance("alice")).isEqualTo(75);
            assertThat(bank.ledgerRows("alice")).isEqualTo(1);
        }
        ReadmeSnippets.assertShown(SOURCE, "kafka-producer");
        ReadmeSnippets.assertShown(SOURCE, "kafka-consumer");
        ReadmeSnippets.assertShown(SOURCE, "kafka-debit");
    }

    // readme:kafka-debit begin
    /** Value {@code <account>:<amount>}, debited on the inbox's connection: one transaction with the dedup mark. */
    private static Outcome debit(Connection connection, String key, String payment) throws SQLException {
        String[] parts = payment.split(":", 2);
        try (PreparedStatement debit =
                connection.prepareStatement("UPDATE account SET balance = balance - ? WHERE id = ?")) {
            debit.setLong(1, Long.parseLong(parts[1]));
            debit.setString(2, parts[0]);
            debit.executeUpdate();
        }
        try (PreparedStatement ledger =
                connection.prepareStatement("INSERT INTO ledger (account_id, message_key, amount) VALUES (?, ?, ?)")) {
            ledger.setString(1, parts[0]);
            ledger.setString(2, key);
            ledger.setLong(3, Long.parseLong(parts[1]));
            ledger.executeUpdate();
        }
        return Outcome.processed(); // PROCESSED/DUPLICATE commit; anything else rolls back
    }
    // readme:kafka-debit end

    @Test
    void readmeInboxConsumerExample_debitsOnce_andIsShownVerbatim() throws Exception {
        String bootstrap = KafkaFixture.kafka().bootstrapServers();
        String paymentsTopic = KafkaFixture.topic("readme-inbox", 1);
        String group = paymentsTopic + "-group";
        String account = paymentsTopic + "-acc";
        try (PaymentBank bank = new PaymentBank("ReadmeKafkaExampleTest")) {
            bank.open(account, 100);
            String jdbcUrl = bank.database().url();
            JdbcInbox.builder(bank.database().dataSource())
                    .namespace("setup")
                    .createTableIfMissing(true)
                    .build();
            try (var producer = KafkaFixture.producer()) {
                ProducerRecord<String, String> record = new ProducerRecord<>(paymentsTopic, "25");
                KafkaProducers.withKey(record, "10086:PAY");
                producer.send(record);
                producer.send(record); // a resend: the same key
            }

            // readme:kafka-inbox begin
            HikariDataSource dataSource = new HikariDataSource(); // a pool: else a connection per record, half speed
            dataSource.setJdbcUrl(jdbcUrl); // e.g. jdbc:postgresql://127.0.0.1:5432/payments?user=app
            dataSource.setMaximumPoolSize(4); // one connection per worker (workers(4) below)
            JdbcInbox inbox = JdbcInbox.builder(dataSource).namespace(group).build(); // namespace: the consumer group
            var consumer = IdempotentKafkaConsumer.builder(
                            Map.of("bootstrap.servers", bootstrap, "group.id", group, "auto.offset.reset", "earliest"))
                    .topics(paymentsTopic) // dead letters go to <topic>-dlt, checked at start()
                    .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                    .handler((key, record) -> inbox.handle(Delivery.of(key, Fingerprint.of(record.value())), c -> {
                        try (var debit = c.prepareStatement("UPDATE account SET balance = balance - ? WHERE id = ?")) {
                            debit.setLong(1, Long.parseLong(record.value()));
                            debit.setString(2, account);
                            debit.executeUpdate(); // same transaction as the dedup mark
                        }
                        return Outcome.processed(); // PROCESSED/DUPLICATE commit; anything else rolls back
                    }))
                    .workers(4) // partitions in parallel, order kept within each
                    .build()
                    .start(); // consumer.close() on shutdown: finishes the records in hand, commits, closes
            // readme:kafka-inbox end

            KafkaFixture.awaitAllCommitted(group, paymentsTopic);
            consumer.close(); // the consumer first, then the pool its workers use
            dataSource.close();
            assertThat(bank.balance(account)).isEqualTo(75);
        }
        ReadmeSnippets.assertShown(SOURCE, "kafka-inbox");
    }
}
