package com.example.payments;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.zaxxer.hikari.HikariDataSource;
import dev.idem.kafka.IdempotentKafkaConsumer;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/**
 * Sends every payment twice (a producer resend), one payment id again with another amount and one unreadable
 * payment, to a real Kafka broker; the consumer debits each payment once on a real PostgreSQL and dead-letters the
 * other two with their reason. Counted by SQL.
 */
class PaymentConsumerTest {
    private static final int PAYMENTS = 20;

    @Test
    void everyPaymentDebitedOnce_resendsIgnored_badOnesDeadLettered() throws Exception {
        try (InProcessKafka kafka = InProcessKafka.start();
                PrivateDatabase database = new PrivateDatabase();
                HikariDataSource pool = PaymentsApplication.pool(database.url())) {
            PaymentsApplication.createSchema(pool);
            execute(pool, "INSERT INTO account (id, balance_cents) VALUES ('alice', 100000)");
            kafka.createTopic("payments", 2);
            kafka.createTopic("payments-dlt", 2); // at least as many partitions as the source topic

            try (var producer = new KafkaProducer<>(
                    Map.<String, Object>of("bootstrap.servers", kafka.bootstrapServers()),
                    new StringSerializer(),
                    new StringSerializer())) {
                for (int i = 1; i <= PAYMENTS; i++) {
                    var payment = new ProducerRecord<>("payments", "payment-" + i, "alice:" + i * 100);
                    producer.send(payment);
                    producer.send(payment); // the same payment id: a resend
                }
                producer.send(new ProducerRecord<>("payments", "payment-1", "alice:999")); // id reused: REJECTED
                producer.send(new ProducerRecord<>("payments", "payment-x", "not a payment")); // REJECTED
            }

            IdempotentKafkaConsumer<String, String> consumer =
                    PaymentConsumer.start(kafka.bootstrapServers(), "payments", "payments", pool);
            try {
                await().atMost(Duration.ofSeconds(60)).until(() -> committedToTheEnd(kafka, "payments", "payments"));
            } finally {
                consumer.close();
            }

            assertEquals(PAYMENTS, count(pool, "SELECT count(*) FROM payment"));
            assertEquals(PAYMENTS, count(pool, "SELECT count(DISTINCT payment_id) FROM payment"));
            long debited = 100L * PAYMENTS * (PAYMENTS + 1) / 2;
            assertEquals(100000 - debited, count(pool, "SELECT balance_cents FROM account WHERE id = 'alice'"));
            assertEquals(2, endOffsets(kafka, "payments-dlt").values().stream().mapToLong(Long::longValue).sum());
        }
    }

    private static boolean committedToTheEnd(InProcessKafka kafka, String group, String topic) throws Exception {
        Map<TopicPartition, Long> ends = endOffsets(kafka, topic);
        var committed = kafka.admin()
                .listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata()
                .get();
        return ends.entrySet().stream().allMatch(end -> committed.get(end.getKey()) != null
                && committed.get(end.getKey()).offset() == end.getValue());
    }

    private static Map<TopicPartition, Long> endOffsets(InProcessKafka kafka, String topic) throws Exception {
        Set<TopicPartition> partitions = kafka.admin()
                .describeTopics(Set.of(topic))
                .allTopicNames()
                .get()
                .get(topic)
                .partitions()
                .stream()
                .map(p -> new TopicPartition(topic, p.partition()))
                .collect(Collectors.toSet());
        return kafka.admin()
                .listOffsets(partitions.stream().collect(Collectors.toMap(p -> p, p -> OffsetSpec.latest())))
                .all()
                .get()
                .entrySet()
                .stream()
                .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
    }

    private static long count(HikariDataSource pool, String sql) throws SQLException {
        try (Connection connection = pool.getConnection();
                Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery(sql)) {
            rows.next();
            return rows.getLong(1);
        }
    }

    private static void execute(HikariDataSource pool, String sql) throws SQLException {
        try (Connection connection = pool.getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute(sql);
        }
    }
}
