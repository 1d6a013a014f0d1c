package dev.idem.kafka;

import java.util.Objects;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * A record of a batch with its idempotency key (read by the builder's {@link KeyExtractor}).
 *
 * @param key the idempotency key
 * @param record the deserialized record
 * @param <K> record key type
 * @param <V> record value type
 */
public record KeyedRecord<K, V>(String key, ConsumerRecord<K, V> record) {
    public KeyedRecord {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(record, "record");
    }
}
