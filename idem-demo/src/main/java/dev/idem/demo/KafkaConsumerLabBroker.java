package dev.idem.demo;

import dev.idem.testsupport.EmbeddedKafka;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Utils;
import org.jspecify.annotations.Nullable;

/**
 * A consumer lab over Kafka: an in-process broker (or {@code --kafka-bootstrap}), a topic and its {@code -dlt} of
 * the same partitions, one consumer group. The record key is the payment id; a {@link PaymentWorkload.Copy#CROSS}
 * copy goes to the partition half the topic away, which another consumer of the group owns (range assignment), so
 * two consumers fetch the same payment at the same moment.
 */
final class KafkaConsumerLabBroker implements ConsumerLabBroker {
    private final @Nullable EmbeddedKafka embedded;
    private final String bootstrap;
    private final int partitions;
    private final String topic;
    private final String group;
    private final Admin admin;
    private final KafkaProducer<String, String> producer;
    private final AcknowledgedSends<String, String> sends;

    KafkaConsumerLabBroker(@Nullable String external, int partitions, String suffix) {
        this.embedded = external == null ? EmbeddedKafka.start(false, Map.of()) : null;
        this.bootstrap = external == null ? embedded.bootstrapServers() : external;
        this.partitions = partitions;
        this.topic = "idem-lab-payments-" + suffix;
        this.group = "idem-lab-group-" + suffix;
        this.admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap));
        Map<String, Object> settings = new HashMap<>();
        settings.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        settings.put(ProducerConfig.ACKS_CONFIG, "all");
        settings.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        settings.putAll(AcknowledgedSends.SETTINGS);
        this.producer = new KafkaProducer<>(settings, new StringSerializer(), new StringSerializer());
        this.sends = new AcknowledgedSends<>(producer);
    }

    @Override
    public String id() {
        return "kafka";
    }

    @Override
    public void prepare() throws Exception {
        admin.createTopics(List.of(
                        new NewTopic(topic, partitions, (short) 1),
                        new NewTopic(topic + "-dlt", partitions, (short) 1)))
                .all()
                .get(30, TimeUnit.SECONDS);
    }

    @Override
    public Map<String, String> placeholders() {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("bootstrap", bootstrap);
        p.put("brokerUrl", bootstrap);
        p.put("topic", topic);
        p.put("deadLetterTopic", topic + "-dlt");
        p.put("group", group);
        return p;
    }

    @Override
    public List<LabResult.Entry> environment() {
        List<LabResult.Entry> env = new ArrayList<>();
        env.add(new LabResult.Entry(
                "kafka", (embedded == null ? "external broker at " : "in-process KRaft broker at ") + bootstrap));
        env.add(new LabResult.Entry(
                "topic", topic + " (" + partitions + " partitions; " + topic + "-dlt), group " + group));
        return env;
    }

    @Override
    public boolean consumersReady(int processes) throws Exception {
        ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group))
                .all()
                .get(10, TimeUnit.SECONDS)
                .get(group);
        return d != null && d.members().size() >= processes;
    }

    @Override
    public void send(PaymentWorkload.Send send) {
        PaymentWorkload.Payment p = send.payment();
        int home = Utils.toPositive(Utils.murmur2(p.id().getBytes(StandardCharsets.UTF_8))) % partitions;
        int partition = send.copy() == PaymentWorkload.Copy.CROSS ? (home + partitions / 2) % partitions : home;
        ProducerRecord<String, String> record = new ProducerRecord<>(topic, partition, p.id(), p.value());
        record.headers().add(PAYMENT_ID_HEADER, p.id().getBytes(StandardCharsets.UTF_8));
        sends.send(record);
    }

    @Override
    public void flush() throws Exception {
        sends.flush();
    }

    @Override
    public long backlog() throws Exception {
        Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            request.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata()
                .get(10, TimeUnit.SECONDS);
        long backlog = 0;
        for (var e : admin.listOffsets(request).all().get(10, TimeUnit.SECONDS).entrySet()) {
            OffsetAndMetadata c = committed.get(e.getKey());
            backlog += Math.max(0, e.getValue().offset() - (c == null ? 0 : c.offset()));
        }
        return backlog;
    }

    @Override
    public void close() {
        producer.close();
        admin.close();
        if (embedded != null) {
            embedded.close();
        }
    }
}
