package dev.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 14 item 11: a partition's records go to a batch handler, here one {@link JdbcInbox} transaction per batch on
 * PostgreSQL, with an outcome per record: a record that fails is retried (in a later batch), the rest of its batch stays applied,
 * copies are answered DUPLICATE, and every payment is debited exactly once.
 */
class BatchModeTest {
    static KafkaFixture.Bank bank;

    @BeforeAll
    static void setUp() {
        bank = new KafkaFixture.Bank("BatchModeTest");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    @ParameterizedTest
    @ValueSource(strings = {"classic", "consumer"})
    void batchesOfAPartition_inOneTransactionEach_perRecordOutcomes_exactlyOnceEffects(String protocol)
            throws Exception {
        String topic = KafkaFixture.topic("batch", 1);
        String group = topic + "-g";
        String account = topic + "-acc";
        bank.open(account, 1_000_000);
        int payments = 300;
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (int i = 0; i < payments; i++) {
                producer.send(KafkaProducers.withKey(
                        new org.apache.kafka.clients.producer.ProducerRecord<>(topic, 0, null, "1"), "pay-" + i));
                if (i % 10 == 0) { // a copy of an earlier payment, as a resending producer leaves it
                    producer.send(KafkaProducers.withKey(
                            new org.apache.kafka.clients.producer.ProducerRecord<>(topic, 0, null, "1"),
                            "pay-" + (i / 2)));
                }
            }
            producer.flush();
        }
        JdbcInbox inbox = JdbcInbox.builder(bank.database().dataSource())
                .namespace(topic)
                .createTableIfMissing(true)
                .build();
        List<Integer> batchSizes = new CopyOnWriteArrayList<>();
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        try (var consumer = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(group, protocol))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .retryPolicy(KafkaFixture.FAST_RETRY)
                .batchHandler(
                        batch -> {
                            batchSizes.add(batch.size());
                            List<Delivery> deliveries = batch.stream()
                                    .map(r -> Delivery.of(r.key()))
                                    .toList();
                            return inbox.handleBatch(deliveries, dev.idem.jdbc.BatchHandler.eachOf(i -> c -> {
                                KeyedRecord<String, String> r = batch.get(i);
                                boolean firstRunOfPay17 = r.key().equals("pay-17")
                                        && runs.computeIfAbsent(r.key(), k -> new AtomicInteger())
                                                        .incrementAndGet()
                                                == 1;
                                if (firstRunOfPay17) {
                                    throw new IllegalStateException("payment service timed out");
                                }
                                bank.debit(c, account, Long.parseLong(r.record().value()), r.key());
                                return Outcome.processed();
                            }));
                        },
                        100)
                .build()
                .start()) {
            KafkaFixture.awaitAllCommitted(group, topic);
        }
        assertThat(bank.ledgerRows(account)).isEqualTo(payments);
        assertThat(bank.balance(account)).isEqualTo(1_000_000 - payments);
        assertThat(batchSizes).as("records were handed over in batches").anyMatch(size -> size > 1);
        assertThat(runs.get("pay-17").get()).isEqualTo(2);
    }
}
