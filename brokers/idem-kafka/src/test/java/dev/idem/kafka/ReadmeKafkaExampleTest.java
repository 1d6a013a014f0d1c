package dev.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.Fingerprint;
import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.testsupport.PaymentBank;
import dev.idem.testsupport.ReadmeSnippets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

class ReadmeKafkaExampleTest {
    private static final Path SOURCE = Path.of("src/test/java/dev/idem/kafka/ReadmeKafkaExampleTest.java");

    private final List<String> charged = new CopyOnWriteArrayList<>();

    @Test
    void readmeKafkaExample_compilesRuns_andIsShownVerbatim() throws Exception {
        String bootstrap = KafkaFixture.kafka().bootstrapServers();
        String paymentsTopic = KafkaFixture.topic("readme", 1);
        String group = paymentsTopic + "-group";
        String paymentId = "10086";

        // readme:kafka-producer begin
        Map<String, Object> settings = new HashMap<>(KafkaProducers.recommendedSettings()); // idempotence, acks=all
        settings.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (var producer = new KafkaProducer<>(settings, new StringSerializer(), new StringSerializer())) {
            ProducerRecord<String, String> record = new ProducerRecord<>(paymentsTopic, "charge 25");
            KafkaProducers.withKey(record, paymentId + ":PAY");
            producer.send(record); // the key is fixed before the first send ...
            producer.send(record); // ... so a resend is recognised as the same message
        }
        // readme:kafka-producer end

        // readme:kafka-consumer begin
        Guard guard = Guard.builder(InMemoryStore.create()).namespace(group).build(); // or a JDBC / Redis store
        var consumer = IdempotentKafkaConsumer.builder(
                        Map.of("bootstrap.servers", bootstrap, "group.id", group, "auto.offset.reset", "earliest"))
                .topics(paymentsTopic) // dead letters go to <topic>-dlt, checked at start()
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .handler((key, record) -> guard.run(key, () -> chargeCustomer(record.value())))
                .workers(4) // partitions in parallel, order kept within each
                .build()
                .start(); // consumer.close() on shutdown: finishes the records in hand, commits, closes
        // readme:kafka-consumer end

        KafkaFixture.awaitAllCommitted(group, paymentsTopic);
        consumer.close();
        assertThat(KafkaFixture.readAll(paymentsTopic)).hasSize(2);
        assertThat(charged).containsExactly("charge 25");
        ReadmeSnippets.assertShown(SOURCE, "kafka-producer");
        ReadmeSnippets.assertShown(SOURCE, "kafka-consumer");
    }

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
            JdbcInbox inbox = JdbcInbox.builder(dataSource).namespace(group).build(); // the marks live with your data
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

    private void chargeCustomer(String payment) {
        charged.add(payment);
    }
}
