package dev.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.ConfigurationException;
import dev.idem.Outcome;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;

/** Builder validation, key extraction and key stamping: no broker needed. */
class ConfigurationTest {
    private static final Map<String, Object> PROPS = Map.of("bootstrap.servers", "127.0.0.1:1", "group.id", "g");

    @Test
    void builder_withoutGroupId_isRefusedWithTheFix() {
        assertThatThrownBy(() -> IdempotentKafkaConsumer.builder(Map.of("bootstrap.servers", "127.0.0.1:1")))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("group.id");
    }

    @Test
    void builder_withAutoCommit_isRefused() {
        assertThatThrownBy(() -> IdempotentKafkaConsumer.builder(
                        Map.of("bootstrap.servers", "x:1", "group.id", "g", "enable.auto.commit", "true")))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("enable.auto.commit");
    }

    @Test
    void builder_withOwnValueDeserializer_isRefused_pointingToTheBuilderMethod() {
        assertThatThrownBy(() -> IdempotentKafkaConsumer.builder(
                        Map.of("bootstrap.servers", "x:1", "group.id", "g", "value.deserializer", "whatever")))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining(".valueDeserializer(");
    }

    @Test
    void build_withoutKeyExtractor_isRefused() {
        assertThatThrownBy(() -> IdempotentKafkaConsumer.builder(PROPS)
                        .topics("t")
                        .handler((key, record) -> Outcome.processed())
                        .build())
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("keyFrom");
    }

    @Test
    void build_withoutTopics_isRefused() {
        assertThatThrownBy(() -> IdempotentKafkaConsumer.builder(PROPS)
                        .keyFrom(KeyExtractor.recordKey())
                        .handler((key, record) -> Outcome.processed())
                        .build())
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("topics");
    }

    @Test
    void workers_outOfRange_isRefusedAtOnce() {
        assertThatThrownBy(() -> IdempotentKafkaConsumer.builder(PROPS).workers(0))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("workers");
    }

    @Test
    void keyExtractors_readHeaderRecordKeyAndValue() throws Exception {
        ConsumerRecord<String, String> record = new ConsumerRecord<>("t", 0, 0, "rk", "order-7");
        record.headers().add("idem-key", "hk".getBytes(StandardCharsets.UTF_8));
        assertThat(KeyExtractor.<String, String>header("idem-key").extract(record))
                .isEqualTo("hk");
        assertThat(KeyExtractor.<String, String>header("other").extract(record)).isNull();
        assertThat(KeyExtractor.<String, String>recordKey().extract(record)).isEqualTo("rk");
        assertThat(KeyExtractor.<String, String>value(v -> v + ":PAY").extract(record))
                .isEqualTo("order-7:PAY");
    }

    @Test
    void withKey_isStableAcrossCalls_andRefusesAnotherKey() {
        ProducerRecord<String, String> record = new ProducerRecord<>("t", "v");
        KafkaProducers.withKey(record, "10086:PAY");
        KafkaProducers.withKey(record, "10086:PAY");
        KafkaProducers.withMessageId(record);
        assertThat(record.headers().headers(KafkaProducers.KEY_HEADER)).hasSize(1);
        assertThat(KafkaProducers.key(record)).contains("10086:PAY");
        assertThatThrownBy(() -> KafkaProducers.withKey(record, "10086:SHIP"))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void withMessageId_stampsAKeyOnce() {
        ProducerRecord<String, String> record = new ProducerRecord<>("t", "v");
        String first = KafkaProducers.key(KafkaProducers.withMessageId(record)).orElseThrow();
        assertThat(KafkaProducers.key(KafkaProducers.withMessageId(record))).contains(first);
    }

    @Test
    void recommendedSettings_turnOnIdempotenceAndAcksAll() {
        assertThat(KafkaProducers.recommendedSettings())
                .containsEntry("enable.idempotence", true)
                .containsEntry("acks", "all");
    }
}
