package dev.idem.outbox.kafka;

import dev.idem.kafka.KafkaProducers;
import dev.idem.outbox.spi.OutboxPublisher;
import dev.idem.outbox.spi.OutboxRecord;
import dev.idem.outbox.spi.PublishRefusedException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Publishes outbox records to Kafka: topic = the record's destination, record key = its key (so one key stays on one
 * partition, in order), value = its payload, its headers, and the message id in {@link KafkaProducers#KEY_HEADER}
 * (read it with {@code KeyExtractor.header(KafkaProducers.KEY_HEADER)}). Acknowledged when the broker's {@code
 * acks=all} answer arrives. A non-retriable error (record too large, not authorised) is a refusal; a missing topic is not (the client blocks
 * {@code send} up to {@code max.block.ms} for its metadata, then times out: keep that below the relay's publish timeout); a
 * retriable one or a timeout is retried by the relay without counting.
 *
 * <p>Use the idempotent producer settings of {@link KafkaProducers#recommendedSettings()} ({@link #create(Map)} does).
 * Thread-safe. Closing it closes a producer it created.
 */
public final class KafkaOutboxPublisher implements OutboxPublisher, AutoCloseable {
    private final Producer<String, byte[]> producer;
    private final boolean owned;

    private KafkaOutboxPublisher(Producer<String, byte[]> producer, boolean owned) {
        this.producer = producer;
        this.owned = owned;
    }

    /** A publisher on your producer (String keys, byte[] values; idempotent, {@code acks=all}); not closed by it. */
    public static KafkaOutboxPublisher of(Producer<String, byte[]> producer) {
        return new KafkaOutboxPublisher(Objects.requireNonNull(producer, "producer"), false);
    }

    /**
     * A publisher on a producer of its own: {@code settings} (at least {@code bootstrap.servers}) over {@link
     * KafkaProducers#recommendedSettings()} (idempotence, {@code acks=all}); {@code acks} and idempotence cannot be
     * lowered. {@code linger.ms} defaults to 0: the relay waits for each wave, so lingering only delays it.
     */
    public static KafkaOutboxPublisher create(Map<String, Object> settings) {
        Map<String, Object> merged = new HashMap<>(settings);
        merged.putAll(KafkaProducers.recommendedSettings());
        // The relay sends a wave and waits for it: a record lingering for a fuller batch only delays the wave.
        merged.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, 0);
        return new KafkaOutboxPublisher(
                new KafkaProducer<>(merged, new StringSerializer(), new ByteArraySerializer()), true);
    }

    @Override
    public CompletableFuture<Void> publish(OutboxRecord record) {
        ProducerRecord<String, byte[]> r = new ProducerRecord<>(record.destination(), record.key(), record.payload());
        record.headers().forEach((name, value) -> r.headers().add(name, value.getBytes(StandardCharsets.UTF_8)));
        KafkaProducers.withKey(r, record.messageId());
        CompletableFuture<Void> acked = new CompletableFuture<>();
        producer.send(r, (metadata, error) -> {
            if (error == null) {
                acked.complete(null);
            } else if (error instanceof RetriableException) {
                acked.completeExceptionally(error);
            } else {
                acked.completeExceptionally(new PublishRefusedException(
                        "Kafka refused " + record.messageId() + " for topic " + record.destination() + " ("
                                + error.getClass().getSimpleName() + "): "
                                + error.getMessage(),
                        error));
            }
        });
        return acked;
    }

    @Override
    public void close() {
        if (owned) {
            producer.close();
        }
    }
}
