package dev.idem.kafka;

import static dev.idem.kafka.KafkaFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.testsupport.PaymentBank;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.RecordDeserializationException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Cause 6: records that can never be handled end in the dead-letter topic with a reason; nothing else is stuck. */
class PoisonRecordTest {
    static PaymentBank bank;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("PoisonRecordTest");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    /** A debit {@code account:amount}; anything else cannot be deserialized. */
    record Debit(String account, long amount) {}

    static final class DebitDeserializer implements Deserializer<Debit> {
        @Override
        public Debit deserialize(String topic, byte[] data) {
            String text = new String(data, StandardCharsets.UTF_8);
            String[] parts = text.split(":");
            if (parts.length != 2 || !parts[1].matches("[0-9]+")) {
                throw new SerializationException("not a debit (account:amount)");
            }
            return new Debit(parts[0], Long.parseLong(parts[1]));
        }
    }

    @Test
    void recordsWithoutKey_orUndeserializable_areDeadLetteredWithReason_andLaterRecordsAreHandled() throws Exception {
        String topic = KafkaFixture.topic("poison", 1);
        String group = topic + "-group";
        String account = topic + "-acc";
        bank.open(account, 1000);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.send(producer, topic, 0, "pay-1", account + ":10");
            ProducerRecord<String, String> noKey = new ProducerRecord<>(topic, 0, "rk", account + ":20");
            noKey.headers().add("trace", "t-1".getBytes(StandardCharsets.UTF_8));
            producer.send(noKey).get();
            KafkaFixture.send(producer, topic, 0, "pay-3", "garbage");
            KafkaFixture.send(producer, topic, 0, "pay-4", account + ":40");
        }

        try (Guard guard = Guard.of(InMemoryStore.create(), "poison");
                var consumer = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(group))
                        .topics(topic)
                        .valueDeserializer(new DebitDeserializer())
                        .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                        .handler((key, record) -> guard.run(
                                key,
                                () -> bank.debit(
                                        record.value().account(), record.value().amount(), key)))
                        .build()
                        .start()) {
            KafkaFixture.awaitAllCommitted(group, topic);
        }

        assertThat(bank.ledgerRows(account))
                .as("the good records around the poison ones")
                .isEqualTo(2);
        assertThat(bank.balance(account)).isEqualTo(1000 - 10 - 40);
        List<ConsumerRecord<byte[], byte[]>> dead = KafkaFixture.readAll(topic + "-dlt");
        assertThat(dead).hasSize(2);

        ConsumerRecord<byte[], byte[]> noKey = dead.get(0);
        assertThat(KafkaFixture.header(noKey, IdempotentKafkaConsumer.DLT_OFFSET))
                .isEqualTo("1");
        assertThat(KafkaFixture.header(noKey, IdempotentKafkaConsumer.DLT_OUTCOME))
                .isEqualTo("REJECTED");
        assertThat(KafkaFixture.header(noKey, IdempotentKafkaConsumer.DLT_REASON))
                .contains("no idempotency key", "header 'idem-key'");
        assertThat(KafkaFixture.header(noKey, IdempotentKafkaConsumer.DLT_TOPIC))
                .isEqualTo(topic);
        assertThat(KafkaFixture.header(noKey, IdempotentKafkaConsumer.DLT_PARTITION))
                .isEqualTo("0");
        assertThat(KafkaFixture.header(noKey, IdempotentKafkaConsumer.DLT_ATTEMPTS))
                .isEqualTo("1");
        assertThat(KafkaFixture.header(noKey, "trace"))
                .as("original headers kept")
                .isEqualTo("t-1");
        assertThat(new String(noKey.key(), StandardCharsets.UTF_8)).isEqualTo("rk");
        assertThat(new String(noKey.value(), StandardCharsets.UTF_8)).isEqualTo(account + ":20");

        ConsumerRecord<byte[], byte[]> garbage = dead.get(1);
        assertThat(KafkaFixture.header(garbage, IdempotentKafkaConsumer.DLT_OFFSET))
                .isEqualTo("2");
        assertThat(KafkaFixture.header(garbage, IdempotentKafkaConsumer.DLT_REASON))
                .contains("could not be deserialized", "not a debit");
        assertThat(KafkaFixture.header(garbage, KafkaProducers.KEY_HEADER)).isEqualTo("pay-3");
        assertThat(new String(garbage.value(), StandardCharsets.UTF_8)).isEqualTo("garbage");
    }

    @Test
    void undeserializableRecord_stopsAPlainConsumerAtTheSameOffset_everyPoll() {
        String topic = KafkaFixture.topic("poisonplain", 1);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.send(producer, topic, 0, "pay-1", "garbage");
            KafkaFixture.send(producer, topic, 0, "pay-2", "acc:10");
        }
        Map<String, Object> props = new HashMap<>(KafkaFixture.consumerProps(topic + "-plain"));
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        try (KafkaConsumer<String, Debit> plain =
                new KafkaConsumer<>(props, new StringDeserializer(), new DebitDeserializer())) {
            plain.subscribe(List.of(topic));
            for (int poll = 0; poll < 2; poll++) {
                assertThatThrownBy(() -> {
                            long deadline = System.nanoTime() + WAIT.toNanos();
                            while (System.nanoTime() < deadline) {
                                plain.poll(Duration.ofMillis(100));
                            }
                        })
                        .isInstanceOf(RecordDeserializationException.class)
                        .satisfies(e -> assertThat(((RecordDeserializationException) e).offset())
                                .isZero());
            }
        }
    }
}
