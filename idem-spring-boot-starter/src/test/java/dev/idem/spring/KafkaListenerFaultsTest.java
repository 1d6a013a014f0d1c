package dev.idem.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import dev.idem.ConfigurationException;
import dev.idem.Delivery;
import dev.idem.IdempotencyEvent;
import dev.idem.Outcome;
import dev.idem.spring.kafkafaults.KafkaFaultListeners;
import dev.idem.spring.kafkafaults.KafkaFaultsTestApp;
import dev.idem.spring.rabbitfaults.HandledOutcomes;
import dev.idem.testsupport.EmbeddedKafka;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Primary;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.annotation.RetryableTopic;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.config.ContainerCustomizer;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.listener.CommonLoggingErrorHandler;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.KafkaListenerErrorHandler;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.transaction.annotation.Transactional;

/**
 * Guarded {@code @KafkaListener}s where a Spring application differs from the starter's defaults, on the in-process
 * Kafka broker and the local PostgreSQL: its own container factory, its own error handler, manual acks, a database
 * that ends every session while the method runs.
 */
class KafkaListenerFaultsTest {
    static final EmbeddedKafka KAFKA = EmbeddedKafka.shared();
    static final TestDatabase DB = TestDatabase.postgres("spring_kafka_faults");
    static final String APPLICATION = TestServers.uniquePrefix("kafka_faults");
    static final String OWN_FACTORY_TOPIC = TestServers.uniquePrefix("own-factory");
    static final String OUTAGE_TOPIC = TestServers.uniquePrefix("outage");

    static ConfigurableApplicationContext context;
    static KafkaFaultListeners listeners;
    static HandledOutcomes outcomes;

    @BeforeAll
    static void start() {
        for (String topic : List.of(OWN_FACTORY_TOPIC, OUTAGE_TOPIC)) {
            KAFKA.createTopic(topic, 3);
            KAFKA.createTopic(topic + "-dlt", 3);
        }
        context = new SpringApplicationBuilder(KafkaFaultsTestApp.class)
                .properties(properties(SessionTerminator.url(DB, APPLICATION)))
                .properties("faults.own-factory-topic=" + OWN_FACTORY_TOPIC, "faults.outage-topic=" + OUTAGE_TOPIC)
                .run();
        listeners = context.getBean(KafkaFaultListeners.class);
        outcomes = context.getBean(HandledOutcomes.class);
    }

    static String[] properties(String databaseUrl) {
        return new String[] {
            "spring.datasource.url=" + databaseUrl,
            "spring.liquibase.enabled=false",
            "spring.kafka.bootstrap-servers=" + KAFKA.bootstrapServers(),
            "spring.kafka.consumer.group-id=" + TestServers.uniquePrefix("group"),
            "spring.kafka.consumer.auto-offset-reset=earliest",
            "idem.kafka.initial-delay=20ms",
            "idem.kafka.max-delay=100ms",
            "idem.kafka.max-attempts=3",
            "idem.kafka.in-progress-delay=50ms",
            "idem.jdbc.lock-wait=100ms"
        };
    }

    @AfterAll
    static void stop() {
        context.close();
        DB.close();
    }

    @Test
    void ownContainerFactory_keyInProgressPastSpringKafkasTenDeliveries_isAppliedOnceReleased() throws Exception {
        String id = "own-" + UUID.randomUUID();
        IdempotentGuards guards = context.getBean(IdempotentGuards.class);
        try (Connection holder = DB.connection()) { // not the application's pool, whose sessions a test may end
            holder.setAutoCommit(false);
            // Another consumer's uncommitted copy of the same payment holds the key's mark.
            guards.inbox("own-factory").handle(holder, Delivery.of(id), c -> Outcome.processed());
            long before = outcomes.count("own-factory", Outcome.Type.IN_PROGRESS);
            send(OWN_FACTORY_TOPIC, id);
            await().atMost(Duration.ofSeconds(30)) // spring-kafka's own error handler skips it after 10 deliveries
                    .until(() -> outcomes.count("own-factory", Outcome.Type.IN_PROGRESS) - before > 12);
            holder.rollback();
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> rows(id) == 1);
        assertThat(deadLetters(OWN_FACTORY_TOPIC, List.of(id))).isZero();
    }

    /**
     * Without a dead-letter topic the recoverer refuses a rejected record, which is kept: it must wait between
     * deliveries (each wait reported as a retry) rather than be delivered again at once, again and again.
     */
    @Test
    void rejectedRecord_withoutADeadLetterTopic_waitsBetweenDeliveries() {
        String topic = TestServers.uniquePrefix("kept");
        KAFKA.createTopic(topic, 1);
        String h2 = "jdbc:h2:mem:" + TestServers.uniquePrefix("kept") + ";DB_CLOSE_DELAY=-1";
        try (ConfigurableApplicationContext kept = new SpringApplicationBuilder(KeptRejectionsApp.class)
                .properties(properties(h2))
                .properties(
                        "idem.kafka.dead-letter=false", "idem.jdbc.create-table-if-missing=true", "kept.topic=" + topic)
                .run()) {
            HandledOutcomes seen = kept.getBean(HandledOutcomes.class);
            send(topic, null, null); // no key: the guard rejects it
            await().atMost(Duration.ofSeconds(30))
                    .until(() -> seen.count("kept-rejections", Outcome.Type.REJECTED) >= 4);
            long deliveries = seen.count("kept-rejections", Outcome.Type.REJECTED);
            assertThat(seen.count(IdempotencyEvent.Type.RETRY_SCHEDULED, "kept-rejections", Outcome.Type.REJECTED))
                    .as("a wait before each of the %d deliveries after the first", deliveries - 1)
                    .isGreaterThanOrEqualTo(deliveries - 1);
        }
    }

    @Test
    void ownContainerFactory_withItsOwnErrorHandler_failsTheStartup_namingTheFix() {
        assertThat(startupFailure(new SpringApplicationBuilder(OwnErrorHandlerApp.class)))
                .hasMessageContaining(GuardedOnOwnHandler.class.getName() + ".onPayment")
                .hasMessageContaining("ownHandlerFactory")
                .hasMessageContaining("IdemKafka.errorHandler");
    }

    @Test
    void containerCustomizer_settingItsOwnErrorHandler_failsTheStartup_namingTheFix() {
        assertThat(startupFailure(new SpringApplicationBuilder(CustomizedHandlerApp.class)))
                .hasMessageContaining(GuardedInAKafkaTransaction.class.getName() + ".onPayment")
                .hasMessageContaining("CommonLoggingErrorHandler")
                .hasMessageContaining("IdemKafka.errorHandler");
    }

    @Test
    void guardedListener_inManualAckMode_failsTheStartup_namingTheFix() {
        assertThat(startupFailure(new SpringApplicationBuilder(ManualAckApp.class)
                        .properties("spring.kafka.listener.ack-mode=manual")))
                .hasMessageContaining(GuardedWithManualAck.class.getName() + ".onPayment")
                .hasMessageContaining("MANUAL")
                .hasMessageContaining("spring.kafka.listener.ack-mode");
    }

    @Test
    void guardedListener_withRetryTopics_failsTheStartup_namingTheFix() {
        assertThat(startupFailure(new SpringApplicationBuilder(RetryTopicsApp.class)))
                .hasMessageContaining(GuardedWithRetryTopics.class.getName() + ".onPayment")
                .hasMessageContaining("retry topics")
                .hasMessageContaining("IN_PROGRESS");
    }

    @Test
    void guardedListener_withItsOwnListenerErrorHandler_failsTheStartup_namingTheFix() {
        assertThat(startupFailure(new SpringApplicationBuilder(ListenerErrorHandlerApp.class)))
                .hasMessageContaining(GuardedWithListenerErrorHandler.class.getName() + ".onPayment")
                .hasMessageContaining("'swallowing'")
                .hasMessageContaining("Remove errorHandler");
    }

    @Test
    void guardedListener_inAKafkaTransaction_failsTheStartup_namingTheFix() {
        assertThat(startupFailure(new SpringApplicationBuilder(KafkaTransactionApp.class)
                        .properties("spring.kafka.producer.transaction-id-prefix=" + TestServers.uniquePrefix("tx"))))
                .hasMessageContaining(GuardedInAKafkaTransaction.class.getName() + ".onPayment")
                .hasMessageContaining("KafkaTransactionManager")
                .hasMessageContaining("AfterRollbackProcessor");
    }

    @Test
    void aDatabaseEndingEverySessionMidMethod_deadLettersNothing_andAppliesEachPaymentOnceAfterwards()
            throws Exception {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 9; i++) {
            ids.add("outage-" + UUID.randomUUID());
        }
        try (SessionTerminator terminator = SessionTerminator.start(DB, APPLICATION)) {
            for (int i = 0; i < ids.size(); i++) {
                send(OUTAGE_TOPIC, i % 3, ids.get(i));
            }
            // Each partition retries its first record in place: three records far past the bound of 3 attempts.
            await().atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(200))
                    .until(() -> deadLetters(OUTAGE_TOPIC, ids) > 0
                            || ids.stream()
                                            .filter(id -> listeners.attempts(id) > 10)
                                            .count()
                                    == 3);
            assertThat(terminator.terminated()).isPositive();
        }
        await().atMost(Duration.ofSeconds(60)).until(() -> ids.stream().allMatch(id -> rows(id) == 1));
        assertThat(deadLetters(OUTAGE_TOPIC, ids)).isZero();
        assertThat(Stream.concat(
                        outcomes
                                .described(IdempotencyEvent.Type.RETRY_SCHEDULED, OUTAGE_TOPIC, Outcome.Type.FAILED)
                                .stream(),
                        outcomes
                                .described(IdempotencyEvent.Type.RETRY_SCHEDULED, "outage", Outcome.Type.FAILED)
                                .stream()))
                .as("a database outage is no failure of the handler")
                .isEmpty();
        for (String id : ids) {
            assertThat(rows(id)).as(id).isEqualTo(1);
        }
    }

    /**
     * The most specific cause of {@code app}'s failure to start, which must be a {@link ConfigurationException}. The
     * app's database is an in-memory H2: the check comes before any record.
     */
    private static Throwable startupFailure(SpringApplicationBuilder app) {
        String h2 = "jdbc:h2:mem:" + TestServers.uniquePrefix("refused") + ";DB_CLOSE_DELAY=-1";
        Throwable thrown =
                catchThrowable(() -> app.properties(properties(h2)).run().close());
        assertThat(thrown).as("the startup fails").isNotNull();
        Throwable cause = NestedExceptionUtils.getMostSpecificCause(thrown);
        assertThat(cause).isInstanceOf(ConfigurationException.class);
        return cause;
    }

    /** Read with the test's own pool: the application's sessions are the ones the outage ends. */
    private static int rows(String id) {
        return new JdbcTemplate(DB.dataSource())
                .queryForObject("SELECT COUNT(*) FROM ledger WHERE payment_id = ?", Integer.class, id);
    }

    private static void send(String topic, String key) {
        send(topic, null, key);
    }

    private static void send(String topic, @Nullable Integer partition, @Nullable String key) {
        Properties p = new Properties();
        p.put("bootstrap.servers", KAFKA.bootstrapServers());
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            producer.send(new ProducerRecord<>(topic, partition, key, "amount=1"));
        }
    }

    /** The records of {@code <topic>-dlt} whose key is one of {@code keys}. */
    private static long deadLetters(String topic, Collection<String> keys) {
        Properties p = new Properties();
        p.put("bootstrap.servers", KAFKA.bootstrapServers());
        try (KafkaConsumer<String, String> c =
                new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> partitions = List.of(
                    new TopicPartition(topic + "-dlt", 0),
                    new TopicPartition(topic + "-dlt", 1),
                    new TopicPartition(topic + "-dlt", 2));
            c.assign(partitions);
            c.seekToBeginning(partitions);
            Map<TopicPartition, Long> ends = c.endOffsets(partitions);
            long found = 0;
            while (partitions.stream().anyMatch(tp -> c.position(tp) < ends.get(tp))) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                    if (keys.contains(r.key())) {
                        found++;
                    }
                }
            }
            return found;
        }
    }

    /** A guarded listener on the application's own factory, which has spring-kafka's error handler, not Idem's. */
    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(GuardedOnOwnHandler.class)
    static class OwnErrorHandlerApp {
        @Bean
        ConcurrentKafkaListenerContainerFactory<Object, Object> ownHandlerFactory(
                ConsumerFactory<Object, Object> consumers) {
            ConcurrentKafkaListenerContainerFactory<Object, Object> factory =
                    new ConcurrentKafkaListenerContainerFactory<>();
            factory.setConsumerFactory(consumers);
            factory.setCommonErrorHandler(new DefaultErrorHandler());
            return factory;
        }
    }

    static class GuardedOnOwnHandler {
        @KafkaListener(topics = "own-handler", containerFactory = "ownHandlerFactory", autoStartup = "false")
        @Transactional
        @Idempotent(namespace = "own-handler", key = "#record.key()")
        public void onPayment(ConsumerRecord<String, String> record) {}
    }

    /** A guarded listener whose failures go to retry topics and at last their dead-letter topic. */
    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(GuardedWithRetryTopics.class)
    static class RetryTopicsApp {}

    static class GuardedWithRetryTopics {
        @RetryableTopic(attempts = "3", autoCreateTopics = "false")
        @KafkaListener(topics = "retry-topics", autoStartup = "false")
        @Transactional
        @Idempotent(namespace = "retry-topics", key = "#record.key()")
        public void onPayment(ConsumerRecord<String, String> record) {}
    }

    /**
     * A guarded listener on Spring Boot's factory when the application has a KafkaTransactionManager (and a
     * transaction manager of its DataSource for @Transactional).
     */
    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(GuardedInAKafkaTransaction.class)
    static class KafkaTransactionApp {
        @Bean
        @Primary
        DataSourceTransactionManager transactionManager(DataSource dataSource) {
            return new DataSourceTransactionManager(dataSource);
        }
    }

    static class GuardedInAKafkaTransaction {
        @KafkaListener(topics = "kafka-transaction", autoStartup = "false")
        @Transactional
        @Idempotent(namespace = "kafka-transaction", key = "#record.key()")
        public void onPayment(ConsumerRecord<String, String> record) {}
    }

    /** Spring Boot's factory, whose containers a ContainerCustomizer gives an error handler that logs and skips. */
    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(GuardedInAKafkaTransaction.class)
    static class CustomizedHandlerApp {
        @Bean
        ContainerCustomizer<Object, Object, ConcurrentMessageListenerContainer<Object, Object>> loggingHandler() {
            return container -> container.setCommonErrorHandler(new CommonLoggingErrorHandler());
        }
    }

    /**
     * A guarded listener with a listener-level error handler that returns: the guard's InProgressException would end in
     * it and the record be committed unapplied.
     */
    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(GuardedWithListenerErrorHandler.class)
    static class ListenerErrorHandlerApp {
        @Bean
        KafkaListenerErrorHandler swallowing() {
            return (message, exception) -> null;
        }
    }

    static class GuardedWithListenerErrorHandler {
        @KafkaListener(topics = "listener-error-handler", errorHandler = "swallowing", autoStartup = "false")
        @Transactional
        @Idempotent(namespace = "listener-error-handler", key = "#record.key()")
        public void onPayment(ConsumerRecord<String, String> record) {}
    }

    /** A guarded listener whose guard rejects every record (it has no key). */
    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(RejectedWithoutKey.class)
    static class KeptRejectionsApp {
        @Bean
        HandledOutcomes handledOutcomes() {
            return new HandledOutcomes();
        }
    }

    static class RejectedWithoutKey {
        @KafkaListener(topics = "${kept.topic}")
        @Idempotent(namespace = "kept-rejections", key = "#record.key()")
        public void onPayment(ConsumerRecord<String, String> record) {}
    }

    /** A guarded listener that acknowledges by itself: a duplicate the guard skips would never be acknowledged. */
    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(GuardedWithManualAck.class)
    static class ManualAckApp {}

    static class GuardedWithManualAck {
        @KafkaListener(topics = "manual-ack", autoStartup = "false")
        @Transactional
        @Idempotent(namespace = "manual-ack", key = "#record.key()")
        public void onPayment(ConsumerRecord<String, String> record, Acknowledgment ack) {
            ack.acknowledge();
        }
    }
}
