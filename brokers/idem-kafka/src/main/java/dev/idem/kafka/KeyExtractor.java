package dev.idem.kafka;

import dev.idem.spi.KeyBytes;
import java.util.Objects;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.jspecify.annotations.Nullable;

/**
 * Reads the idempotency key of a record. A {@code null} or blank key, or an exception thrown here, makes the record
 * {@code REJECTED} (dead-lettered with the reason): a record is never handled without a key.
 *
 * @param <K> record key type
 * @param <V> record value type
 */
@FunctionalInterface
public interface KeyExtractor<K, V> {

    @Nullable
    String extract(ConsumerRecord<K, V> record) throws Exception;

    /** What the extractor reads, for the dead-letter reason (e.g. {@code header 'idem-key'}). */
    default String describe() {
        return "the key extractor";
    }

    /**
     * The last header named {@code name}; the producer stamps it with {@link KafkaProducers}. The bytes are the key
     * exactly: UTF-8 text when they decode without loss and hold no control character, else {@code hex:} and the
     * bytes in lowercase hex (a text key that starts with {@code hex:} is written in hex too, so the two forms never
     * meet). Two different headers never give the same key.
     */
    static <K, V> KeyExtractor<K, V> header(String name) {
        Objects.requireNonNull(name, "name");
        return new KeyExtractor<>() {
            @Override
            public @Nullable String extract(ConsumerRecord<K, V> record) {
                Header header = record.headers().lastHeader(name);
                return header == null || header.value() == null ? null : KeyBytes.exactKey(header.value());
            }

            @Override
            public String describe() {
                return "header '" + name + "'";
            }
        };
    }

    /**
     * The record's key: a {@code byte[]} read exactly as {@link #header(String)} reads a header, anything else through
     * {@code toString()}.
     */
    static <K, V> KeyExtractor<K, V> recordKey() {
        return new KeyExtractor<>() {
            @Override
            public @Nullable String extract(ConsumerRecord<K, V> record) {
                Object key = record.key();
                if (key == null) {
                    return null;
                }
                return key instanceof byte[] bytes ? KeyBytes.exactKey(bytes) : key.toString();
            }

            @Override
            public String describe() {
                return "the record key";
            }
        };
    }

    /** A business key computed from the deserialized value, e.g. {@code order -> order.id() + ":" + order.action()}. */
    static <K, V> KeyExtractor<K, V> value(Function<? super V, @Nullable String> function) {
        Objects.requireNonNull(function, "function");
        return new KeyExtractor<>() {
            @Override
            public @Nullable String extract(ConsumerRecord<K, V> record) {
                return record.value() == null ? null : function.apply(record.value());
            }

            @Override
            public String describe() {
                return "a function of the value";
            }
        };
    }
}
