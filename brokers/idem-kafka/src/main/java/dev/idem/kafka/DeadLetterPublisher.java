package dev.idem.kafka;

import dev.idem.ConfigurationException;
import dev.idem.Outcome;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;

/**
 * Publishes records the runner gives up on to their dead-letter topic, with the reason in headers, and waits for the
 * topic's acknowledgement: a dead-lettered record is final only once it is there.
 *
 * <p>The default producer is built from the consumer's whole client configuration (security, SASL, SSL, DNS and
 * every other shared setting) minus the consumer-only settings, plus {@link KafkaProducers#recommendedSettings()},
 * and its {@code delivery.timeout.ms} is the dead-letter timeout: the runner never stops waiting for a send the
 * producer is still retrying, so a record is not dead-lettered twice by a timeout.
 */
final class DeadLetterPublisher implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(DeadLetterPublisher.class.getName());
    /** Waited beyond the delivery timeout for the producer to report the send's end. */
    private static final Duration GRACE = Duration.ofSeconds(5);

    private final Producer<byte[], byte[]> producer;
    private final boolean owned;
    private final Function<String, String> topicOf;
    private final Duration timeout;

    private DeadLetterPublisher(
            Producer<byte[], byte[]> producer, boolean owned, Function<String, String> topicOf, Duration timeout) {
        this.producer = producer;
        this.owned = owned;
        this.topicOf = topicOf;
        this.timeout = timeout;
    }

    /** A publisher on the caller's producer, which it does not close; sends are awaited for {@code timeout}. */
    static DeadLetterPublisher using(
            Producer<byte[], byte[]> producer, Function<String, String> topicOf, Duration timeout) {
        return new DeadLetterPublisher(producer, false, topicOf, timeout);
    }

    /** A publisher on its own producer built by {@link #producerConfig}; closed with the publisher. */
    static DeadLetterPublisher owning(
            Map<String, Object> consumerConfig, Function<String, String> topicOf, Duration timeout) {
        Producer<byte[], byte[]> producer = new KafkaProducer<>(
                producerConfig(consumerConfig, timeout), new ByteArraySerializer(), new ByteArraySerializer());
        return new DeadLetterPublisher(producer, true, topicOf, timeout.plus(GRACE));
    }

    /** The consumer's client settings that a producer shares, with the recommended settings and {@code timeout}. */
    static Map<String, Object> producerConfig(Map<String, Object> consumerConfig, Duration timeout) {
        Set<String> consumerOnly = new java.util.HashSet<>(ConsumerConfig.configNames());
        consumerOnly.removeAll(ProducerConfig.configNames());
        Map<String, Object> props = new HashMap<>();
        consumerConfig.forEach((key, value) -> {
            if (!consumerOnly.contains(key) && !key.equals(CommonClientConfigs.CLIENT_ID_CONFIG)) {
                props.put(key, value);
            }
        });
        Object clientId = consumerConfig.get(CommonClientConfigs.CLIENT_ID_CONFIG);
        if (clientId != null) {
            props.put(CommonClientConfigs.CLIENT_ID_CONFIG, clientId + "-dead-letters");
        }
        props.putAll(KafkaProducers.recommendedSettings());
        long millis = Math.max(1, timeout.toMillis());
        props.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) Math.min(Integer.MAX_VALUE, millis));
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) Math.min(30_000, millis));
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, millis);
        return props;
    }

    /**
     * Checks that the dead-letter topic of each source topic exists, creating the missing ones when {@code create}.
     *
     * @throws ConfigurationException naming the missing topics and the two fixes
     */
    static void checkTopics(
            Map<String, Object> consumerConfig,
            List<String> sourceTopics,
            Function<String, String> topicOf,
            boolean create) {
        Map<String, String> deadLetterTopics = new LinkedHashMap<>();
        for (String topic : sourceTopics) {
            deadLetterTopics.put(topic, topicOf.apply(topic));
        }
        Map<String, Object> adminConfig = new HashMap<>();
        consumerConfig.forEach((key, value) -> {
            if (AdminClientConfig.configNames().contains(key) && !key.equals(CommonClientConfigs.CLIENT_ID_CONFIG)) {
                adminConfig.put(key, value);
            }
        });
        try (Admin admin = Admin.create(adminConfig)) {
            List<String> missing = new ArrayList<>();
            for (String deadLetterTopic : Set.copyOf(deadLetterTopics.values())) {
                if (!exists(admin, deadLetterTopic)) {
                    missing.add(deadLetterTopic);
                }
            }
            if (missing.isEmpty()) {
                return;
            }
            if (!create) {
                throw new ConfigurationException("dead-letter topic(s) " + missing + " do not exist: create them"
                        + " (kafka-topics.sh --create --topic ...) or call .createDeadLetterTopics(true) on the"
                        + " builder; without them no record could ever be dead-lettered");
            }
            create(admin, missing);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ConfigurationException(
                    "interrupted while checking the dead-letter topics " + deadLetterTopics.values());
        } catch (ExecutionException | TimeoutException e) {
            throw new ConfigurationException(
                    "cannot check or create the dead-letter topics " + deadLetterTopics.values() + ": " + e.getMessage()
                            + " (check the admin permissions and the broker addresses)");
        }
    }

    /** Creates {@code topics}; one that another consumer created meanwhile ("already exists") is as good. */
    private static void create(Admin admin, List<String> topics)
            throws InterruptedException, ExecutionException, TimeoutException {
        var created = admin.createTopics(topics.stream()
                        .map(name -> new NewTopic(name, Optional.empty(), Optional.empty()))
                        .toList())
                .values();
        for (var topic : created.values()) {
            try {
                topic.get(30, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) {
                    throw e;
                }
            }
        }
    }

    private static boolean exists(Admin admin, String topic)
            throws InterruptedException, ExecutionException, TimeoutException {
        try {
            admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS);
            return true;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof UnknownTopicOrPartitionException) {
                return false;
            }
            throw e;
        }
    }

    /**
     * Sends the record with the dead-letter headers and waits for the acknowledgement.
     *
     * @return null when the dead-letter topic holds the record, else why it could not be sent (retry later)
     */
    @Nullable
    String publish(ConsumerRecord<byte[], byte[]> raw, Outcome outcome, int attempts, String runner)
            throws InterruptedException {
        String topic = topicOf.apply(raw.topic());
        Headers headers = new RecordHeaders(raw.headers().toArray());
        headers.add(IdempotentKafkaConsumer.DLT_REASON, utf8(outcome.reason()));
        headers.add(IdempotentKafkaConsumer.DLT_OUTCOME, utf8(outcome.type().name()));
        headers.add(IdempotentKafkaConsumer.DLT_ATTEMPTS, utf8(Integer.toString(attempts)));
        headers.add(IdempotentKafkaConsumer.DLT_TOPIC, utf8(raw.topic()));
        headers.add(IdempotentKafkaConsumer.DLT_PARTITION, utf8(Integer.toString(raw.partition())));
        headers.add(IdempotentKafkaConsumer.DLT_OFFSET, utf8(Long.toString(raw.offset())));
        try {
            producer.send(new ProducerRecord<>(topic, null, raw.key(), raw.value(), headers))
                    .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            LOG.log(
                    System.Logger.Level.WARNING,
                    "{0} {1}-{2}@{3} dead-lettered to {4} ({5}): {6}",
                    runner,
                    raw.topic(),
                    raw.partition(),
                    raw.offset(),
                    topic,
                    outcome.type(),
                    outcome.reason());
            return null;
        } catch (ExecutionException | TimeoutException | org.apache.kafka.common.KafkaException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "{0} {1}-{2}@{3}: dead-letter topic {4} did not take the record ({5}); retrying later",
                    runner,
                    raw.topic(),
                    raw.partition(),
                    raw.offset(),
                    topic,
                    e.toString());
            Throwable cause = e instanceof ExecutionException ? e.getCause() : null;
            return String.valueOf(cause != null ? cause : e);
        }
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        if (owned) {
            producer.close(Duration.ofSeconds(5));
        }
    }
}
