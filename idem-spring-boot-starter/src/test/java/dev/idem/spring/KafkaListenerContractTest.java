package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.DeadLetterException;
import dev.idem.RetryPolicy;
import dev.idem.spi.KeyBytes;
import dev.idem.spring.kafka.IdemKafka;
import dev.idem.testkit.AdapterContract;
import dev.idem.testkit.TestMessage;
import dev.idem.testsupport.EmbeddedKafka;
import dev.idem.testsupport.TestServers;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.kafka.autoconfigure.DefaultKafkaConsumerFactoryCustomizer;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.config.MethodKafkaListenerEndpoint;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.messaging.handler.annotation.support.DefaultMessageHandlerMethodFactory;

/**
 * The {@link AdapterContract} for an {@code @Idempotent} {@code @KafkaListener} on Spring Boot's container factory
 * with the starter's error handler, on the in-process Kafka broker. The contract's ledger plays the guard: the
 * listener throws what an {@code @Idempotent} method throws for the ledger's outcome ({@code
 * IdempotentRetryLaterException} for a retry, a {@link DeadLetterException} for a rejection or a missing key, the
 * handler's own exception as it is). The idempotency key is header {@value #KEY_HEADER}; the record key routes.
 *
 * <p>A crash is a container whose commits are lost from that moment (as a killed process's are) and that then stops:
 * its partitions go to the other consumers at the last committed offsets.
 */
@Execution(ExecutionMode.CONCURRENT) // each scenario has its own destination, listener containers and ledger
class KafkaListenerContractTest extends AdapterContract {
    static final EmbeddedKafka KAFKA = EmbeddedKafka.shared();
    static final String KEY_HEADER = "idem-key";
    /**
     * Where a message goes: its route, else its idempotency key, each new one to the next partition (so that two
     * copies routed apart, or a create and its cancel, are on two partitions).
     */
    private final Map<String, Integer> routes = new ConcurrentHashMap<>();

    /** Container ids whose commits are dropped: their process is dead. */
    static final Set<String> CRASHED = ConcurrentHashMap.newKeySet();

    static ConfigurableApplicationContext context;

    private final AtomicInteger consumerIds = new AtomicInteger();
    private final List<ConsumerRecord<byte[], byte[]>> deadLetters = new ArrayList<>();
    private final Set<MessageListenerContainer> running = ConcurrentHashMap.newKeySet();
    private String topic = "";
    private @Nullable KafkaConsumer<byte[], byte[]> deadLetterReader;
    private @Nullable KafkaProducer<byte[], byte[]> producer;

    @BeforeAll
    static void startTheApplication() {
        context = new SpringApplicationBuilder(ContractApp.class)
                .properties(
                        "spring.datasource.url=jdbc:h2:mem:" + TestServers.uniquePrefix("kafka_contract")
                                + ";DB_CLOSE_DELAY=-1",
                        "spring.liquibase.enabled=false",
                        "spring.kafka.bootstrap-servers=" + KAFKA.bootstrapServers(),
                        "spring.kafka.consumer.auto-offset-reset=earliest",
                        "spring.kafka.consumer.key-deserializer=" + ByteArrayDeserializer.class.getName(),
                        "spring.kafka.consumer.value-deserializer=" + ByteArrayDeserializer.class.getName(),
                        "spring.kafka.producer.key-serializer=" + ByteArraySerializer.class.getName(),
                        "spring.kafka.producer.value-serializer=" + ByteArraySerializer.class.getName(),
                        "spring.kafka.consumer.properties.session.timeout.ms=6000",
                        "spring.kafka.consumer.properties.heartbeat.interval.ms=500",
                        "idem.kafka.initial-delay="
                                + RETRY_POLICY.initialDelay().toMillis() + "ms",
                        "idem.kafka.multiplier=" + RETRY_POLICY.multiplier(),
                        "idem.kafka.max-delay=" + RETRY_POLICY.maxDelay().toMillis() + "ms",
                        "idem.kafka.max-attempts=" + RETRY_POLICY.maxAttempts(),
                        "idem.kafka.jitter=" + RETRY_POLICY.jitter())
                .run();
    }

    @AfterAll
    static void stopTheApplication() {
        context.close();
    }

    @Override
    protected void createDestination(String name) {
        topic = TestServers.uniquePrefix(name);
        KAFKA.createTopic(topic, 2);
        KAFKA.createTopic(topic + "-dlt", 2);
        deadLetterReader =
                new KafkaConsumer<>(clientProperties(), new ByteArrayDeserializer(), new ByteArrayDeserializer());
        deadLetterReader.assign(partitions(topic + "-dlt"));
        deadLetterReader.seekToBeginning(partitions(topic + "-dlt"));
        producer = new KafkaProducer<>(clientProperties(), new ByteArraySerializer(), new ByteArraySerializer());
        running.clear();
    }

    @Override
    protected void deleteDestination() {
        if (deadLetterReader != null) {
            deadLetterReader.close();
        }
        if (producer != null) {
            producer.close();
        }
    }

    @Override
    protected RunningConsumer startConsumer(ContractHandler handler, RetryPolicy retryPolicy) throws Exception {
        assertThat(context.getBean(IdemProperties.class).getKafka().retryPolicy())
                .isEqualTo(retryPolicy);
        String id = topic + "-consumer-" + consumerIds.incrementAndGet();
        MethodKafkaListenerEndpoint<byte[], byte[]> endpoint = new MethodKafkaListenerEndpoint<>();
        endpoint.setId(id);
        endpoint.setGroupId(topic + "-group");
        endpoint.setTopics(topic);
        endpoint.setBean(new ContractListener(handler));
        endpoint.setMethod(ContractListener.class.getMethod("onRecord", ConsumerRecord.class));
        DefaultMessageHandlerMethodFactory methods = new DefaultMessageHandlerMethodFactory();
        methods.setBeanFactory(context.getBeanFactory());
        methods.afterPropertiesSet();
        endpoint.setMessageHandlerMethodFactory(methods);
        MessageListenerContainer container = context.getBean(
                        "kafkaListenerContainerFactory", ConcurrentKafkaListenerContainerFactory.class)
                .createListenerContainer(endpoint);
        container.start();
        running.add(container);
        awaitStableGroup();
        return RunningConsumer.of(
                () -> {
                    running.remove(container);
                    container.stop();
                },
                () -> {
                    running.remove(container);
                    CRASHED.add(id);
                    container.stop(() -> {}); // returns at once; the stopping container commits nothing
                });
    }

    /**
     * Waits until the group has settled with every running consumer a member: a consumer blocked in a handler cannot
     * take part in a rebalance, so a message published while the group still forms could wait for it. (The group is
     * not found until its first member joined.)
     */
    private void awaitStableGroup() {
        await().atMost(Duration.ofSeconds(60)).ignoreExceptions().until(() -> {
            ConsumerGroupDescription group = KAFKA.admin()
                    .describeConsumerGroups(List.of(topic + "-group"))
                    .describedGroups()
                    .get(topic + "-group")
                    .get();
            return group.groupState() == GroupState.STABLE && group.members().size() == running.size();
        });
    }

    @Override
    protected void publish(TestMessage message) throws Exception {
        String route = message.route() != null ? message.route() : message.key();
        Integer partition = route == null ? null : routes.computeIfAbsent(route, r -> routes.size() % 2);
        ProducerRecord<byte[], byte[]> record =
                new ProducerRecord<>(topic, partition, route == null ? null : bytes(route), message.payload());
        if (message.keyBytes() != null) {
            record.headers().add(KEY_HEADER, message.keyBytes());
        }
        message.headers().forEach((name, value) -> record.headers().add(name, value));
        Objects.requireNonNull(producer).send(record).get();
    }

    @Override
    protected synchronized List<DeadLetter> deadLetters() {
        KafkaConsumer<byte[], byte[]> reader = deadLetterReader;
        if (reader != null) {
            reader.poll(Duration.ofMillis(50)).forEach(deadLetters::add);
        }
        return deadLetters.stream()
                .map(r -> new DeadLetter(
                        header(r, KEY_HEADER) == null ? null : KeyBytes.exactKey(header(r, KEY_HEADER)),
                        new String(header(r, IdemKafka.REASON_HEADER), StandardCharsets.UTF_8)))
                .toList();
    }

    @Override
    protected void replayDeadLetters() throws Exception {
        List<ConsumerRecord<byte[], byte[]>> dead;
        synchronized (this) {
            deadLetters();
            dead = List.copyOf(deadLetters);
        }
        try (KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(clientProperties(), new ByteArraySerializer(), new ByteArraySerializer())) {
            for (ConsumerRecord<byte[], byte[]> r : dead) {
                producer.send(new ProducerRecord<>(topic, null, r.key(), r.value(), r.headers()))
                        .get();
            }
        }
    }

    @Override
    protected Map<String, byte[]> hostileHeaders() {
        return Map.of(
                IdemKafka.OUTCOME_HEADER,
                bytes("REJECTED"),
                IdemKafka.REASON_HEADER,
                bytes("set by the producer"),
                "kafka_dlt-original-topic",
                bytes(topic),
                "kafka_dlt-exception-fqcn",
                bytes(DeadLetterException.class.getName()),
                "kafka_deliveryAttempt",
                new byte[] {0, 0, 3, (byte) 0xE7});
    }

    private static byte @Nullable [] header(ConsumerRecord<byte[], byte[]> record, String name) {
        Header h = record.headers().lastHeader(name);
        return h == null ? null : h.value();
    }

    private static List<TopicPartition> partitions(String topic) {
        return List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
    }

    private static Properties clientProperties() {
        Properties p = new Properties();
        p.put("bootstrap.servers", KAFKA.bootstrapServers());
        p.put("enable.auto.commit", "false");
        return p;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** The guarded listener: what an {@code @Idempotent} method throws for the ledger's answer. */
    public static class ContractListener {
        private final ContractHandler handler;

        ContractListener(ContractHandler handler) {
            this.handler = handler;
        }

        @Idempotent(namespace = "contract", key = "#record.headers().lastHeader('" + KEY_HEADER + "')?.value()")
        public void onRecord(ConsumerRecord<byte[], byte[]> record) throws Exception {
            ListenerContractOutcomes.handle(handler, KEY_HEADER, header(record, KEY_HEADER), record.value());
        }
    }

    /** Spring Boot with the starter, no listener of its own: the contract starts its consumers. */
    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class ContractApp {
        /** Commits of a crashed container's consumer are lost, as a killed process's are. */
        @Bean
        DefaultKafkaConsumerFactoryCustomizer crashableConsumers() {
            return factory -> factory.addPostProcessor(KafkaListenerContractTest::crashable);
        }
    }

    @SuppressWarnings("unchecked")
    static <K, V> Consumer<K, V> crashable(Consumer<K, V> consumer) {
        return (Consumer<K, V>) Proxy.newProxyInstance(
                KafkaListenerContractTest.class.getClassLoader(), new Class<?>[] {Consumer.class}, (proxy, m, args) -> {
                    if ((m.getName().equals("commitSync") || m.getName().equals("commitAsync")) && crashedThread()) {
                        return null;
                    }
                    try {
                        return m.invoke(consumer, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    private static boolean crashedThread() {
        String thread = Thread.currentThread().getName();
        return CRASHED.stream().anyMatch(id -> thread.startsWith(id + "-"));
    }
}
