package dev.idem.kafka;

import dev.idem.Outcome;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * A guarded record handler: it runs the effect through an Idem guard with the extracted key and returns the
 * guard's {@link Outcome}, e.g. {@code (key, record) -> guard.run(key, () -> debit(record.value()))}.
 *
 * <p>Throwing an {@link Exception} counts as {@code FAILED} (retried with backoff, dead-lettered after the bound);
 * a {@link dev.idem.DeadLetterException} as {@code REJECTED}. An {@link Error} stops the consumer at once without
 * committing the record, like a crash.
 *
 * @param <K> record key type
 * @param <V> record value type
 */
@FunctionalInterface
public interface RecordHandler<K, V> {
    Outcome handle(String key, ConsumerRecord<K, V> record) throws Exception;
}
