package dev.idem.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Delivery;
import dev.idem.Fingerprint;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.kafka.IdempotentKafkaConsumer;
import dev.idem.kafka.KafkaProducers;
import dev.idem.kafka.KeyExtractor;
import dev.idem.outbox.kafka.KafkaOutboxPublisher;
import dev.idem.testsupport.EmbeddedKafka;
import dev.idem.testsupport.ReadmeSnippets;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/** The README's guarded consumer that publishes through the outbox: it compiles, runs, and is shown verbatim. */
class ReadmeOutboxExampleTest {
    private static final Path SOURCE = Path.of("src/test/java/dev/idem/outbox/ReadmeOutboxExampleTest.java");

    @Test
    void readmeOutboxExample_paysOnce_andPublishesTheEventWithItsStableId() throws Exception {
        EmbeddedKafka broker = EmbeddedKafka.shared();
        String bootstrap = broker.bootstrapServers();
        String ordersTopic = TestServers.uniquePrefix("orders");
        String completedTopic = ordersTopic + "-completed";
        for (String topic : List.of(ordersTopic, ordersTopic + "-dlt", completedTopic)) {
            broker.createTopic(topic, 1);
        }
        try (TestDatabase db = TestDatabase.h2("ReadmeOutboxExampleTest")) {
            db.execute("CREATE TABLE payment (order_id VARCHAR(64) PRIMARY KEY, amount BIGINT NOT NULL)");
            JdbcInbox.builder(db.dataSource())
                    .namespace(ordersTopic)
                    .createTableIfMissing(true)
                    .build();
            OutboxSchema.create(db.dataSource());
            DataSource dataSource = db.dataSource();
            String group = ordersTopic;

            // readme:outbox-consumer begin
            JdbcInbox inbox = JdbcInbox.builder(dataSource).namespace(group).build(); // namespace: the consumer group
            Outbox outbox = Outbox.builder().build(); // its table: docs/outbox.md (Table), or the starter's migrations
            var consumer = IdempotentKafkaConsumer.builder(
                            Map.of("bootstrap.servers", bootstrap, "group.id", group, "auto.offset.reset", "earliest"))
                    .topics(ordersTopic)
                    .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                    .handler((key, order) -> inbox.handle(Delivery.of(key, Fingerprint.of(order.value())), c -> {
                        pay(c, order.key(), order.value()); // the payment, on the inbox's connection
                        var paid = OutboxMessage.to(completedTopic)
                                .key(order.key())
                                .payload(order.value());
                        outbox.send(c, paid); // the event, in the same transaction
                        return Outcome.processed(); // mark, payment and event commit together, or none
                    }))
                    .build()
                    .start();
            var kafka = KafkaOutboxPublisher.create(Map.of("bootstrap.servers", bootstrap));
            var relay = OutboxRelay.builder(dataSource, kafka).build().start(); // the id rides in idem-key
            // readme:outbox-consumer end

            try (consumer;
                    relay;
                    kafka;
                    KafkaProducer<String, String> producer = new KafkaProducer<>(
                            Map.of("bootstrap.servers", bootstrap), new StringSerializer(), new StringSerializer())) {
                for (int copy = 0; copy < 2; copy++) { // the order arrives twice
                    producer.send(KafkaProducers.withKey(new ProducerRecord<>(ordersTopic, "order-1", "250"), "pay-1"));
                }
                producer.flush();
                List<ConsumerRecord<String, String>> events = read(bootstrap, completedTopic);
                assertThat(events.get(0).key()).isEqualTo("order-1");
                String id = new String(
                        events.get(0)
                                .headers()
                                .lastHeader(KafkaProducers.KEY_HEADER)
                                .value(),
                        StandardCharsets.UTF_8);
                assertThat(id).startsWith("OUTBOX_");
                await().atMost(Duration.ofSeconds(30)).until(() -> relay.stats().unsent() == 0);
            }
            assertThat(count(db, "SELECT COUNT(*) FROM payment"))
                    .as("paid once")
                    .isEqualTo(1);
            assertThat(count(db, "SELECT COUNT(*) FROM idem_outbox"))
                    .as("one event")
                    .isEqualTo(1);
        }
        ReadmeSnippets.assertShown(SOURCE, "outbox-consumer");
    }

    private static long count(TestDatabase db, String sql) throws SQLException {
        try (Connection c = db.connection();
                var rs = c.createStatement().executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static void pay(Connection c, String orderId, String amount) throws SQLException {
        try (var insert = c.prepareStatement("INSERT INTO payment (order_id, amount) VALUES (?, ?)")) {
            insert.setString(1, orderId);
            insert.setLong(2, Long.parseLong(amount));
            insert.executeUpdate();
        }
    }

    /** Waits for the first event of {@code topic}. */
    private static List<ConsumerRecord<String, String>> read(String bootstrap, String topic) {
        List<ConsumerRecord<String, String>> records = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(
                Map.of("bootstrap.servers", bootstrap, "group.id", topic, "auto.offset.reset", "earliest"),
                new StringDeserializer(),
                new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            await().atMost(Duration.ofSeconds(60)).until(() -> {
                consumer.poll(Duration.ofMillis(200)).forEach(records::add);
                return !records.isEmpty();
            });
        }
        return records;
    }
}
