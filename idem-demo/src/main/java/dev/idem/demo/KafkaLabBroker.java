package dev.idem.demo;

import dev.idem.demo.ConsumerFaults.Fault;
import dev.idem.kafka.IdempotentKafkaConsumer;
import dev.idem.kafka.KafkaProducers;
import dev.idem.kafka.KeyExtractor;
import dev.idem.testsupport.EmbeddedKafka;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.jspecify.annotations.Nullable;

/**
 * The lab over Kafka: an in-process KRaft broker (the producer behind a TCP proxy) or {@code --kafka-bootstrap}; one
 * topic, one consumer group per strategy through {@link IdempotentKafkaConsumer}, a dead-letter topic each.
 */
final class KafkaLabBroker implements LabBroker {
    private final int partitions;
    private final @Nullable EmbeddedKafka embedded;
    private final String bootstrap;
    private final String produceBootstrap;
    private final String topic = "idem-lab-orders-" + LabBroker.runSuffix();
    private final Admin admin;
    private final List<LabResult.Entry> environment = new ArrayList<>();
    private Map<TopicPartition, Long> endOffsets = Map.of();

    private KafkaLabBroker(LabOptions options, PrintStream out) {
        this.partitions = options.partitions();
        if (options.kafkaBootstrap().isPresent()) {
            bootstrap = options.kafkaBootstrap().get();
            produceBootstrap = bootstrap;
            embedded = null;
            environment.add(new LabResult.Entry("kafka", "external broker at " + bootstrap));
        } else {
            out.println("  starting an in-process Kafka broker ...");
            embedded = EmbeddedKafka.start(true, Map.of());
            bootstrap = embedded.bootstrapServers();
            produceBootstrap = embedded.proxiedBootstrapServers();
            environment.add(new LabResult.Entry(
                    "kafka", "in-process KRaft broker at " + bootstrap + " (producer through a TCP proxy)"));
        }
        admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap));
    }

    /** Checks an external broker first (a clear {@link LabOptions.BadOptionException} when it does not answer). */
    static KafkaLabBroker start(LabOptions options, PrintStream out, Runnable header) {
        options.kafkaBootstrap().ifPresent(KafkaLabBroker::check);
        header.run();
        return new KafkaLabBroker(options, out);
    }

    @Override
    public String id() {
        return "kafka";
    }

    @Override
    public void prepare(List<Strategy> strategies) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1)))
                .all()
                .get(30, TimeUnit.SECONDS);
        environment.add(new LabResult.Entry("topic", topic + " (" + partitions + " partitions)"));
        List<NewTopic> deadLetterTopics = new ArrayList<>();
        for (Strategy s : strategies) {
            deadLetterTopics.add(new NewTopic(deadLetterTopic(s), 1, (short) 1));
        }
        admin.createTopics(deadLetterTopics).all().get(30, TimeUnit.SECONDS);
    }

    @Override
    public List<LabResult.Entry> environment() {
        return environment;
    }

    @Override
    public FlowProducer.Published publish(OrderFlow flow, LabOptions.Faults faults, LongConsumer progress)
            throws Exception {
        FlowProducer producer = new FlowProducer(produceBootstrap, embedded == null ? null : embedded.proxy(), topic);
        FlowProducer.Published published = producer.publish(flow, faults, progress);
        endOffsets = endOffsets(topic);
        return published;
    }

    @Override
    public long storedCopies() {
        return endOffsets.values().stream().mapToLong(Long::longValue).sum();
    }

    @Override
    public Optional<String> unavailable(Fault fault) {
        return Optional.empty();
    }

    @Override
    public String label(Fault fault) {
        return switch (fault) {
            case TIMEOUT -> "consumer timeout, redelivered while handled";
            case CONCURRENT -> "same message to two consumers at once";
            case CRASH -> "crash after DB commit, before offset commit";
            case NONE -> "none";
        };
    }

    @Override
    public boolean overlapsInProcess() {
        return true;
    }

    @Override
    public Subscription subscribe(Strategy strategy, Handler handler) {
        String group = "idem-lab-" + strategy.id() + "-" + topic;
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 100);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "idem-lab-" + strategy.id());
        IdempotentKafkaConsumer<byte[], byte[]> consumer = IdempotentKafkaConsumer.builder(props)
                .keyDeserializer(new ByteArrayDeserializer())
                .valueDeserializer(new ByteArrayDeserializer())
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .handler((key, record) -> handler.handle(key, record.value()))
                .retryPolicy(StrategyRun.RETRY)
                .deadLetterTopic(t -> deadLetterTopic(strategy))
                .workers(2)
                .pollTimeout(Duration.ofMillis(50))
                .build()
                .start();
        return new Subscription() {
            private volatile Map<TopicPartition, Long> committed = Map.of();

            @Override
            public boolean isRunning() {
                return consumer.isRunning();
            }

            @Override
            public Optional<Throwable> failure() {
                return consumer.failure();
            }

            @Override
            public long settled() {
                committed = committedOffsets(group, committed);
                return committed.values().stream().mapToLong(Long::longValue).sum();
            }

            @Override
            public boolean finished() {
                committed = committedOffsets(group, committed);
                Map<TopicPartition, Long> c = committed;
                return endOffsets.entrySet().stream().allMatch(e -> c.getOrDefault(e.getKey(), 0L) >= e.getValue());
            }

            @Override
            public void close() {
                consumer.close();
            }
        };
    }

    @Override
    public long deadLetters(Strategy strategy) throws Exception {
        return endOffsets(deadLetterTopic(strategy)).values().stream()
                .mapToLong(Long::longValue)
                .sum();
    }

    @Override
    public void close() {
        admin.close();
        if (embedded != null) {
            embedded.close();
        }
    }

    private String deadLetterTopic(Strategy strategy) {
        return topic + "-" + strategy.id().replace('_', '-') + "-dlt";
    }

    private Map<TopicPartition, Long> committedOffsets(String group, Map<TopicPartition, Long> last) {
        try {
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata()
                    .get(10, TimeUnit.SECONDS);
            Map<TopicPartition, Long> result = new HashMap<>();
            offsets.forEach((tp, o) -> {
                if (o != null) {
                    result.put(tp, o.offset());
                }
            });
            return result;
        } catch (Exception e) {
            return last;
        }
    }

    private Map<TopicPartition, Long> endOffsets(String topicName) throws Exception {
        int count = admin.describeTopics(List.of(topicName))
                .allTopicNames()
                .get(30, TimeUnit.SECONDS)
                .get(topicName)
                .partitions()
                .size();
        Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        for (int p = 0; p < count; p++) {
            request.put(new TopicPartition(topicName, p), OffsetSpec.latest());
        }
        Map<TopicPartition, Long> end = new HashMap<>();
        admin.listOffsets(request).all().get(30, TimeUnit.SECONDS).forEach((tp, info) -> end.put(tp, info.offset()));
        return end;
    }

    static void check(String bootstrap) {
        Map<String, Object> props = Map.of(
                AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5000,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 8000);
        try (Admin probe = Admin.create(props)) {
            probe.describeCluster().nodes().get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new LabOptions.BadOptionException("Kafka does not answer at " + bootstrap + " ("
                    + LabDatabase.rootMessage(e) + "): start it or fix --kafka-bootstrap, or leave it out to use the"
                    + " in-process broker");
        }
    }
}
