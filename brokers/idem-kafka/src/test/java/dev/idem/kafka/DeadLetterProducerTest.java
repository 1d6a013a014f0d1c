package dev.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.ConfigurationException;
import dev.idem.Outcome;
import dev.idem.testsupport.EmbeddedKafka;
import dev.idem.testsupport.TestServers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/** Issue 14 item 8: the dead-letter producer reaches the cluster the consumer reaches; start-up checks and leaks. */
class DeadLetterProducerTest {

    @Test
    void onASaslCluster_aPoisonRecordIsDeadLettered_withTheConsumersCredentials() throws Exception {
        try (EmbeddedKafka kafka = EmbeddedKafka.startWithSaslPlain("alice", "alice-secret")) {
            Map<String, Object> client = new HashMap<>();
            client.put("bootstrap.servers", kafka.saslBootstrapServers());
            client.put("security.protocol", "SASL_PLAINTEXT");
            client.put("sasl.mechanism", "PLAIN");
            client.put(
                    "sasl.jaas.config",
                    "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\""
                            + " password=\"alice-secret\";");
            String topic = TestServers.uniquePrefix("sasl");
            try (Admin admin = Admin.create(client)) {
                admin.createTopics(java.util.List.of(
                                new NewTopic(topic, 1, (short) 1), new NewTopic(topic + "-dlt", 1, (short) 1)))
                        .all()
                        .get(30, TimeUnit.SECONDS);
            }
            Map<String, Object> producerProps = new HashMap<>(client);
            producerProps.put(ProducerConfig.ACKS_CONFIG, "all");
            try (KafkaProducer<String, String> producer =
                    new KafkaProducer<>(producerProps, new StringSerializer(), new StringSerializer())) {
                producer.send(KafkaProducers.withKey(new ProducerRecord<>(topic, 0, null, "poison"), "pay-1"))
                        .get(30, TimeUnit.SECONDS);
            }
            Map<String, Object> consumerProps = new HashMap<>(client);
            consumerProps.put(ConsumerConfig.GROUP_ID_CONFIG, topic + "-g");
            consumerProps.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            try (var consumer = IdempotentKafkaConsumer.builder(consumerProps)
                    .topics(topic)
                    .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                    .deadLetterTimeout(Duration.ofSeconds(10))
                    .handler((key, record) -> Outcome.rejected("poison"))
                    .build()
                    .start()) {
                org.awaitility.Awaitility.await()
                        .atMost(KafkaFixture.WAIT)
                        .until(() -> countRecords(client, topic + "-dlt") == 1);
            }
        }
    }

    private static int countRecords(Map<String, Object> client, String topic) {
        try (KafkaConsumer<byte[], byte[]> reader =
                new KafkaConsumer<>(client, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            var tp = new org.apache.kafka.common.TopicPartition(topic, 0);
            reader.assign(java.util.List.of(tp));
            return reader.endOffsets(java.util.List.of(tp)).get(tp).intValue();
        }
    }

    @Test
    void producerConfig_isTheConsumersClientConfig_minusConsumerOnlySettings_withTheTimeoutAsDeliveryTimeout() {
        Map<String, Object> consumer = new HashMap<>();
        consumer.put("bootstrap.servers", "b:9093");
        consumer.put("security.protocol", "SASL_SSL");
        consumer.put("sasl.mechanism", "SCRAM-SHA-512");
        consumer.put("sasl.jaas.config", "jaas");
        consumer.put("ssl.truststore.location", "/etc/trust.jks");
        consumer.put("ssl.truststore.password", "changeit");
        consumer.put("client.dns.lookup", "use_all_dns_ips");
        consumer.put("client.id", "payments");
        consumer.put("group.id", "payments");
        consumer.put("max.poll.records", 100);
        consumer.put("isolation.level", "read_committed");
        consumer.put("auto.offset.reset", "earliest");
        consumer.put("enable.auto.commit", false);

        Map<String, Object> producer = DeadLetterPublisher.producerConfig(consumer, Duration.ofSeconds(45));

        assertThat(producer)
                .containsEntry("bootstrap.servers", "b:9093")
                .containsEntry("security.protocol", "SASL_SSL")
                .containsEntry("sasl.mechanism", "SCRAM-SHA-512")
                .containsEntry("sasl.jaas.config", "jaas")
                .containsEntry("ssl.truststore.location", "/etc/trust.jks")
                .containsEntry("ssl.truststore.password", "changeit")
                .containsEntry("client.dns.lookup", "use_all_dns_ips")
                .containsEntry("client.id", "payments-dead-letters")
                .containsEntry("delivery.timeout.ms", 45_000)
                .containsEntry("enable.idempotence", true)
                .doesNotContainKeys(
                        "group.id", "max.poll.records", "isolation.level", "auto.offset.reset", "enable.auto.commit");
    }

    @Test
    void start_withAMissingDeadLetterTopic_isRefusedWithTheFix_andOpensNoConsumer() {
        String topic = TestServers.uniquePrefix("nodlt");
        KafkaFixture.kafka().createTopic(topic, 1);
        AtomicInteger consumersMade = new AtomicInteger();
        var runner = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(topic + "-g"))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .consumerFactory(props -> {
                    consumersMade.incrementAndGet();
                    return new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
                })
                .handler((key, record) -> Outcome.processed())
                .build();
        assertThatThrownBy(runner::start)
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining(topic + "-dlt")
                .hasMessageContaining("createDeadLetterTopics(true)");
        assertThat(consumersMade.get()).isZero();
        assertThat(runner.isRunning()).isFalse();
    }

    @Test
    void severalConsumersStartingAtOnce_withCreateDeadLetterTopics_allStart() throws Exception {
        int consumers = 6;
        String topic = TestServers.uniquePrefix("mkdlt-race");
        KafkaFixture.kafka().createTopic(topic, consumers);
        CyclicBarrier together = new CyclicBarrier(consumers);
        ExecutorService starters = Executors.newFixedThreadPool(consumers);
        List<Future<IdempotentKafkaConsumer<String, String>>> started = new ArrayList<>();
        try {
            for (int i = 0; i < consumers; i++) {
                var runner = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(topic + "-g"))
                        .topics(topic)
                        .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                        .createDeadLetterTopics(true)
                        .handler((key, record) -> Outcome.processed())
                        .build();
                started.add(starters.submit(() -> {
                    together.await(30, TimeUnit.SECONDS);
                    return runner.start();
                }));
            }
            List<String> failures = new ArrayList<>();
            for (var future : started) {
                try {
                    assertThat(future.get(60, TimeUnit.SECONDS).isRunning()).isTrue();
                } catch (ExecutionException e) {
                    failures.add(String.valueOf(e.getCause()));
                }
            }
            assertThat(failures).isEmpty();
        } finally {
            for (var future : started) {
                if (future.isDone() && !future.isCancelled()) {
                    try {
                        future.get().close();
                    } catch (ExecutionException ignored) {
                        // this one did not start
                    }
                }
            }
            starters.shutdownNow();
        }
    }

    @Test
    void start_withCreateDeadLetterTopics_createsTheMissingTopic() throws Exception {
        String topic = TestServers.uniquePrefix("mkdlt");
        KafkaFixture.kafka().createTopic(topic, 1);
        try (var runner = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(topic + "-g"))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .createDeadLetterTopics(true)
                .handler((key, record) -> Outcome.processed())
                .build()
                .start()) {
            assertThat(KafkaFixture.kafka().admin().listTopics().names().get(30, TimeUnit.SECONDS))
                    .contains(topic + "-dlt");
        }
    }
}
