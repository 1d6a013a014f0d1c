package dev.idem.testsupport;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.id.InMemoryNodeIdLeaseStore;
import dev.idem.id.MessageIdFormat;
import dev.idem.id.MessageIdGenerator;
import dev.idem.id.spi.NodeIdLeaseStore;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

class ReadmeMessageIdExampleTest {
    private static final Path SOURCE = Path.of("src/test/java/dev/idem/testsupport/ReadmeMessageIdExampleTest.java");

    @Test
    void messageIdExample_stampsTheRecordOnce_andIsShownVerbatim() {
        NodeIdLeaseStore leaseStore = InMemoryNodeIdLeaseStore.create();
        MockProducer<String, byte[]> producer =
                new MockProducer<>(true, null, new StringSerializer(), new ByteArraySerializer());
        String orderId = "10086";
        byte[] payload = "{\"amount\":2500}".getBytes(StandardCharsets.UTF_8);

        // readme:message-id begin
        // Once per process: leases a node id no other live producer holds, renews it, releases it on close().
        MessageIdGenerator ids = MessageIdGenerator.builder()
                .prefix("ORDER")
                .nodeIdLease(leaseStore, "order-service")
                .build();

        // Per message: every retry resends this same record, with this same id.
        String messageId = ids.nextString(); // ORDER_20240115143000123_NODE01_0001
        ProducerRecord<String, byte[]> record = new ProducerRecord<>("orders", orderId, payload);
        record.headers().add("idem-key", messageId.getBytes(StandardCharsets.UTF_8));
        producer.send(record);
        // readme:message-id end
        ids.close();

        String sent = new String(
                producer.history().get(0).headers().lastHeader("idem-key").value(), StandardCharsets.UTF_8);
        assertThat(MessageIdFormat.defaults().parse(sent).prefix()).isEqualTo("ORDER");
        ReadmeSnippets.assertShown(SOURCE, "message-id");
    }
}
