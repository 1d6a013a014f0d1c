package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.spring.app.Ledger;
import dev.idem.spring.app.Notifier;
import dev.idem.spring.app.PaymentListener;
import dev.idem.spring.app.PaymentsTestApp;
import dev.idem.testsupport.EmbeddedKafka;
import dev.idem.testsupport.TestServers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The payments application end to end: a real in-process Kafka broker, a real database (the subclass says which),
 * the starter's auto-configuration, Flyway creating Idem's table next to the application's own. Each subclass's
 * context is closed after it: no other class shares it, and its listeners would poll on through the module's run.
 */
@SpringBootTest(classes = PaymentsTestApp.class)
@DirtiesContext
abstract class PaymentsAppContract {
    static final EmbeddedKafka KAFKA = EmbeddedKafka.shared();

    @Autowired
    PaymentListener listener;

    @Autowired
    Ledger ledger;

    @Autowired
    Notifier notifier;

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    TransactionTemplate transactions;

    /** Topics and group for one subclass; the database URL is the subclass's. */
    static void kafkaProperties(DynamicPropertyRegistry registry, String databaseUrl) {
        String suffix = TestServers.uniquePrefix("spring");
        String topic = "payments-" + suffix;
        String batchTopic = "batch-payments-" + suffix;
        String batchTxTopic = "batch-tx-payments-" + suffix;
        for (String t : List.of(topic, batchTopic, batchTxTopic)) {
            KAFKA.createTopic(t, 3);
            KAFKA.createTopic(t + "-dlt", 3);
        }
        registry.add("spring.datasource.url", () -> databaseUrl);
        registry.add("spring.liquibase.enabled", () -> "false");
        registry.add("spring.kafka.bootstrap-servers", KAFKA::bootstrapServers);
        registry.add("spring.kafka.consumer.group-id", () -> "group-" + suffix);
        registry.add("spring.kafka.consumer.auto-offset-reset", () -> "earliest");
        registry.add("payments.topic", () -> topic);
        registry.add("payments.batch-topic", () -> batchTopic);
        registry.add("payments.batch-tx-topic", () -> batchTxTopic);
        registry.add("idem.kafka.initial-delay", () -> "20ms");
        registry.add("idem.kafka.max-delay", () -> "100ms");
        registry.add("idem.kafka.max-attempts", () -> "3");
        registry.add("idem.kafka.in-progress-delay", () -> "50ms");
        registry.add("idem.jdbc.lock-wait", () -> "1s");
    }

    String topic() {
        return listenerTopic("payments.topic");
    }

    @Autowired
    org.springframework.core.env.Environment environment;

    private String listenerTopic(String property) {
        return environment.getRequiredProperty(property);
    }

    @Test
    void duplicatesAndConcurrentCopies_ofEachPayment_areAppliedOnce() {
        List<String> ids = new ArrayList<>();
        try (KafkaProducer<String, String> producer = producer()) {
            for (int i = 0; i < 20; i++) {
                String id = "pay-" + UUID.randomUUID();
                ids.add(id);
                for (int copy = 0; copy < 6; copy++) { // two copies on each of the three partitions, read concurrently
                    producer.send(new ProducerRecord<>(topic(), copy % 3, id, "amount=10"));
                }
            }
        }
        awaitConsumed(environment.getRequiredProperty("spring.kafka.consumer.group-id"), topic());
        for (String id : ids) {
            assertThat(ledger.rows(id)).as(id).isEqualTo(1);
            assertThat(marks("payments", id)).as(id).isEqualTo(1);
        }
    }

    @Test
    void rolledBackTransaction_leavesNoMark_andTheCallRunsAgain() {
        ConsumerRecord<String, String> record =
                new ConsumerRecord<>(topic(), 0, 0, "pay-" + UUID.randomUUID(), "amount=5");
        transactions.executeWithoutResult(status -> {
            listener.onPayment(record);
            status.setRollbackOnly();
        });
        assertThat(marks("payments", record.key())).isZero();
        assertThat(ledger.rows(record.key())).isZero();

        transactions.executeWithoutResult(status -> listener.onPayment(record));
        transactions.executeWithoutResult(status -> listener.onPayment(record));
        assertThat(ledger.attempts(record.key())).isEqualTo(2);
        assertThat(ledger.rows(record.key())).isEqualTo(1);
        assertThat(marks("payments", record.key())).isEqualTo(1);
    }

    @Test
    void failingTransactionalListener_isRolledBackAndRedelivered_thenAppliedOnce() {
        String id = "pay-" + UUID.randomUUID();
        send(topic(), id, "fail:2");
        await().atMost(Duration.ofSeconds(30)).until(() -> ledger.rows(id) == 1);
        awaitConsumed(environment.getRequiredProperty("spring.kafka.consumer.group-id"), topic());
        assertThat(ledger.attempts(id)).isEqualTo(3);
        assertThat(ledger.rows(id)).isEqualTo(1);
        assertThat(marks("payments", id)).isEqualTo(1);
    }

    @Test
    void poisonRecords_goToTheDeadLetterTopic_withTheirReason() {
        String id = "pay-" + UUID.randomUUID();
        send(topic(), id, "amount=7");
        send(topic(), id, "amount=700"); // the same key with another payload: a key-reuse bug
        send(topic(), null, "amount=1"); // no key at all
        List<ConsumerRecord<String, String>> dead = deadLetters(topic() + "-dlt", 2);
        assertThat(dead).allSatisfy(r -> assertThat(header(r, "idem-outcome")).isEqualTo("REJECTED"));
        assertThat(dead).anySatisfy(r -> {
            assertThat(r.value()).isEqualTo("amount=700");
            assertThat(header(r, "idem-reason")).contains("different payload");
        });
        assertThat(dead).anySatisfy(r -> {
            assertThat(r.value()).isEqualTo("amount=1");
            assertThat(header(r, "idem-reason")).contains("key");
        });
        assertThat(ledger.rows(id)).isEqualTo(1);
    }

    @Test
    void batchListener_appliesEachRecordOnce_andRedeliversTheFailedOne() {
        String batchTopic = environment.getRequiredProperty("payments.batch-topic");
        List<String> ids = new ArrayList<>();
        try (KafkaProducer<String, String> producer = producer()) {
            for (int i = 0; i < 10; i++) {
                String id = "batch-" + UUID.randomUUID();
                ids.add(id);
                producer.send(new ProducerRecord<>(batchTopic, 0, id, i == 4 ? "fail:1" : "amount=1"));
                if (i % 3 == 0) {
                    producer.send(new ProducerRecord<>(batchTopic, 0, id, i == 4 ? "fail:1" : "amount=1"));
                }
            }
        }
        awaitConsumed(environment.getRequiredProperty("spring.kafka.consumer.group-id") + "-batch", batchTopic);
        for (String id : ids) {
            assertThat(ledger.rows(id)).as(id).isEqualTo(1);
        }
        assertThat(ledger.attempts(ids.get(4))).isEqualTo(2);
    }

    @Test
    void transactionalBatch_getsOnlyTheNewRecords_duplicatesWithinAndAcrossBatchesFilteredOut() {
        String batchTxTopic = environment.getRequiredProperty("payments.batch-tx-topic");
        String group = environment.getRequiredProperty("spring.kafka.consumer.group-id") + "-batch-tx";
        List<String> first = new ArrayList<>();
        try (KafkaProducer<String, String> producer = producer()) {
            for (int i = 0; i < 5; i++) {
                String id = "batch-tx-" + UUID.randomUUID();
                first.add(id);
                producer.send(new ProducerRecord<>(batchTxTopic, 0, id, "amount=1"));
            }
        }
        awaitConsumed(group, batchTxTopic);
        int callsBefore = ledger.batchCalls().size();
        String fresh = "batch-tx-" + UUID.randomUUID();
        try (KafkaProducer<String, String> producer = producer()) {
            for (String id : first) {
                producer.send(new ProducerRecord<>(batchTxTopic, 0, id, "amount=1"));
            }
            producer.send(new ProducerRecord<>(batchTxTopic, 0, fresh, "amount=1"));
            producer.send(new ProducerRecord<>(batchTxTopic, 0, fresh, "amount=1"));
        }
        awaitConsumed(group, batchTxTopic);
        List<List<String>> later =
                ledger.batchCalls().subList(callsBefore, ledger.batchCalls().size());
        assertThat(later).isNotEmpty().allSatisfy(call -> assertThat(call).containsExactly(fresh));
        for (String id : first) {
            assertThat(ledger.rows(id)).as(id).isEqualTo(1);
            assertThat(marks("batch-tx-payments", id)).as(id).isEqualTo(1);
        }
        assertThat(ledger.rows(fresh)).isEqualTo(1);
    }

    @Test
    void transactionalBatch_aFailingRecord_isRetriedAndDeadLettered_theOthersAppliedOnce_nothingAckedUnprocessed() {
        String batchTxTopic = environment.getRequiredProperty("payments.batch-tx-topic");
        String group = environment.getRequiredProperty("spring.kafka.consumer.group-id") + "-batch-tx";
        String before = "batch-tx-" + UUID.randomUUID();
        String failing = "batch-tx-" + UUID.randomUUID();
        String after = "batch-tx-" + UUID.randomUUID();
        try (KafkaProducer<String, String> producer = producer()) {
            producer.send(new ProducerRecord<>(batchTxTopic, 1, before, "amount=1"));
            producer.send(new ProducerRecord<>(batchTxTopic, 1, failing, "fail:99"));
            producer.send(new ProducerRecord<>(batchTxTopic, 1, after, "amount=1"));
            producer.send(new ProducerRecord<>(batchTxTopic, 1, before, "amount=999")); // key reuse: REJECTED
        }
        List<ConsumerRecord<String, String>> dead = deadLetters(batchTxTopic + "-dlt", 2);
        assertThat(dead).anySatisfy(r -> {
            assertThat(r.key()).isEqualTo(failing);
            assertThat(header(r, "idem-reason")).contains("failed on attempt");
        });
        assertThat(dead).anySatisfy(r -> {
            assertThat(r.key()).isEqualTo(before);
            assertThat(r.value()).isEqualTo("amount=999");
            assertThat(header(r, "idem-outcome")).isEqualTo("REJECTED");
            assertThat(header(r, "idem-reason")).contains("different payload");
        });
        awaitConsumed(group, batchTxTopic);
        assertThat(ledger.rows(before)).isEqualTo(1);
        assertThat(ledger.rows(after)).isEqualTo(1);
        assertThat(ledger.rows(failing)).isZero();
        assertThat(marks("batch-tx-payments", failing)).isZero();
        assertThat(ledger.attempts(failing)).isGreaterThanOrEqualTo(3); // the attempt bound, each rolled back
    }

    @Test
    void transactionalBatch_rolledBack_leavesNoMarkOfAnyRecord() {
        String batchTxTopic = environment.getRequiredProperty("payments.batch-tx-topic");
        List<ConsumerRecord<String, String>> records = List.of(
                new ConsumerRecord<>(batchTxTopic, 0, 0, "batch-tx-" + UUID.randomUUID(), "amount=1"),
                new ConsumerRecord<>(batchTxTopic, 0, 1, "batch-tx-" + UUID.randomUUID(), "amount=2"));
        transactions.executeWithoutResult(status -> {
            listener.onPaymentBatch(records);
            status.setRollbackOnly();
        });
        for (ConsumerRecord<String, String> r : records) {
            assertThat(marks("batch-tx-payments", r.key())).isZero();
            assertThat(ledger.rows(r.key())).isZero();
        }
        transactions.executeWithoutResult(status -> listener.onPaymentBatch(records));
        transactions.executeWithoutResult(status -> listener.onPaymentBatch(records));
        for (ConsumerRecord<String, String> r : records) {
            assertThat(marks("batch-tx-payments", r.key())).isEqualTo(1);
            assertThat(ledger.rows(r.key())).isEqualTo(1);
            assertThat(ledger.attempts(r.key())).isEqualTo(2); // rolled back, applied; the third call a duplicate
        }
    }

    @Test
    void leaseGuardedCall_outsideATransaction_runsOnce_andADuplicateGetsTheStoredResult() {
        String id = "pay-" + UUID.randomUUID();
        int before = notifier.sent();
        String first = notifier.sendReceipt(id);
        String second = notifier.sendReceipt(id);
        assertThat(second).isEqualTo(first);
        assertThat(notifier.sent()).isEqualTo(before + 1);
    }

    int marks(String namespace, String key) {
        return jdbc.queryForObject("SELECT COUNT(*) FROM idem_keys WHERE id = ?", Integer.class, namespace + ":" + key);
    }

    void send(String topic, String key, String value) {
        try (KafkaProducer<String, String> producer = producer()) {
            producer.send(new ProducerRecord<>(topic, key, value));
        }
    }

    KafkaProducer<String, String> producer() {
        Properties p = new Properties();
        p.put("bootstrap.servers", KAFKA.bootstrapServers());
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    void awaitConsumed(String group, String topic) {
        await().atMost(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(100))
                .until(() -> {
                    Map<TopicPartition, OffsetAndMetadata> committed = KAFKA.admin()
                            .listConsumerGroupOffsets(group)
                            .partitionsToOffsetAndMetadata()
                            .get();
                    try (KafkaConsumer<String, String> c = consumer()) {
                        List<TopicPartition> partitions = List.of(
                                new TopicPartition(topic, 0),
                                new TopicPartition(topic, 1),
                                new TopicPartition(topic, 2));
                        Map<TopicPartition, Long> ends = c.endOffsets(partitions);
                        return partitions.stream()
                                .allMatch(tp -> ends.get(tp) == 0
                                        || (committed.get(tp) != null
                                                && committed.get(tp).offset() == ends.get(tp)));
                    }
                });
    }

    List<ConsumerRecord<String, String>> deadLetters(String topic, int count) {
        List<ConsumerRecord<String, String>> records = new ArrayList<>();
        try (KafkaConsumer<String, String> c = consumer()) {
            c.assign(List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1), new TopicPartition(topic, 2)));
            c.seekToBeginning(c.assignment());
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                c.poll(Duration.ofMillis(100)).forEach(records::add);
                return records.size() >= count;
            });
        }
        return records;
    }

    KafkaConsumer<String, String> consumer() {
        Properties p = new Properties();
        p.put("bootstrap.servers", KAFKA.bootstrapServers());
        p.put("enable.auto.commit", "false");
        return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    static String header(ConsumerRecord<String, String> record, String name) {
        return new String(record.headers().lastHeader(name).value(), StandardCharsets.UTF_8);
    }
}
