package dev.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Guard;
import dev.idem.InMemoryStore;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;

/** Issue 14 item 7: keys read from bytes are exact; two different byte strings never become one key. */
class ExactKeyTest {

    @Test
    void binaryHeaderKeys_thatLossyUtf8WouldMerge_areTwoKeys_andBothRecordsRun() throws Exception {
        String topic = KafkaFixture.topic("binarykeys", 1);
        String group = topic + "-g";
        List<byte[]> keys = List.of(
                new byte[] {'o', 'r', 'd', '-', (byte) 0xFE},
                new byte[] {'o', 'r', 'd', '-', (byte) 0xFF},
                new byte[] {'o', 'r', 'd', '-', 0x01},
                "ord-\u00e9".getBytes(StandardCharsets.UTF_8));
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (byte[] key : keys) {
                ProducerRecord<String, String> record = new ProducerRecord<>(topic, 0, null, "v");
                record.headers().add(KafkaProducers.KEY_HEADER, key);
                producer.send(record).get();
            }
        }
        Set<String> ran = ConcurrentHashMap.newKeySet();
        try (Guard guard = Guard.of(InMemoryStore.create(), "binarykeys");
                var consumer = KafkaFixture.consumer(group, topic)
                        .handler((key, record) -> guard.run(key, () -> ran.add(key)))
                        .build()
                        .start()) {
            KafkaFixture.awaitAllCommitted(group, topic);
        }
        assertThat(ran).containsExactlyInAnyOrder("hex:6f72642dfe", "hex:6f72642dff", "hex:6f72642d01", "ord-é");
        assertThat(KafkaFixture.readAll(topic + "-dlt"))
                .as("control bytes are a key too")
                .isEmpty();
    }
}
