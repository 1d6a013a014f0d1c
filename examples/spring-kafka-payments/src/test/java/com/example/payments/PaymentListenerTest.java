package com.example.payments;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The whole application against a real Kafka broker (in this JVM) and a database of its own on your PostgreSQL:
 * every payment sent twice is debited once; a reused payment id and an unreadable payment are dead-lettered. Counted
 * by SQL.
 */
@SpringBootTest(properties = {"logging.level.kafka=warn", "logging.level.state.change.logger=warn"})
@DirtiesContext
class PaymentListenerTest {
    private static final int PAYMENTS = 20;
    private static InProcessKafka kafka;
    private static PrivateDatabase database;

    @BeforeAll
    static void startServers() throws Exception {
        kafka = InProcessKafka.start();
        database = new PrivateDatabase();
    }

    @DynamicPropertySource
    static void servers(DynamicPropertyRegistry registry) {
        registry.add("spring.kafka.bootstrap-servers", () -> kafka.bootstrapServers());
        registry.add("spring.datasource.url", () -> database.url());
    }

    @AfterAll
    static void stopServers() throws Exception {
        kafka.close();
        database.close();
    }

    @Autowired
    KafkaTemplate<String, String> template;

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    KafkaListenerEndpointRegistry listeners;

    @Test
    void everyPaymentDebitedOnce_resendsIgnored_badOnesDeadLettered() throws Exception {
        jdbc.update("INSERT INTO account (id, balance_cents) VALUES ('alice', 100000)");
        for (int i = 1; i <= PAYMENTS; i++) {
            template.send("payments", "payment-" + i, "alice:" + i * 100);
            template.send("payments", "payment-" + i, "alice:" + i * 100); // the same payment id: a resend
        }
        template.send("payments", "payment-1", "alice:999"); // the id reused with another amount: REJECTED
        template.send("payments", "payment-x", "not a payment"); // REJECTED
        template.flush();

        await().atMost(Duration.ofSeconds(60)).until(() -> committedToTheEnd("payments", "payments"));

        assertEquals(PAYMENTS, jdbc.queryForObject("SELECT count(*) FROM payment", Long.class));
        assertEquals(PAYMENTS, jdbc.queryForObject("SELECT count(DISTINCT payment_id) FROM payment", Long.class));
        long debited = 100L * PAYMENTS * (PAYMENTS + 1) / 2;
        assertEquals(
                100000 - debited,
                jdbc.queryForObject("SELECT balance_cents FROM account WHERE id = 'alice'", Long.class));
        assertEquals(2, endOffsets("payments-dlt").values().stream().mapToLong(Long::longValue).sum());
        // The marks' namespace is the consumer group, through idem.namespace=${spring.kafka.consumer.group-id}.
        assertEquals(
                0, jdbc.queryForObject("SELECT count(*) FROM idem_keys WHERE id NOT LIKE 'payments:%'", Long.class));
        assertTrue(jdbc.queryForObject("SELECT count(*) FROM idem_keys", Long.class) >= PAYMENTS);
        listeners.stop(); // before the broker and the database go
    }

    private static boolean committedToTheEnd(String group, String topic) throws Exception {
        Map<TopicPartition, Long> ends = endOffsets(topic);
        var committed = kafka.admin()
                .listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata()
                .get();
        return ends.entrySet().stream().allMatch(end -> committed.get(end.getKey()) != null
                && committed.get(end.getKey()).offset() == end.getValue());
    }

    private static Map<TopicPartition, Long> endOffsets(String topic) throws Exception {
        Set<TopicPartition> partitions =
                kafka.admin().describeTopics(Set.of(topic)).allTopicNames().get().get(topic).partitions().stream()
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
}
