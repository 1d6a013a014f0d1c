package dev.idem.kafka;

import dev.idem.Outcome;
import java.util.List;

/**
 * A guarded handler for a batch of one partition's records, in offset order, e.g. one {@code JdbcInbox} transaction
 * per batch. It answers one {@link Outcome} per record, in the same order; each record is then treated as it would be
 * alone (final, retried, dead-lettered), and offsets are committed only up to the first record that is not final.
 * Records it retries come back in a later batch; records it finished are never handed to it again by this runner.
 *
 * <p>Throwing an {@link Exception} gives every record of the batch {@link Outcome#ofException}. Returning a list of
 * another size is a programming error: the runner stops and reports it through {@link
 * IdempotentKafkaConsumer#failure()}.
 *
 * @param <K> record key type
 * @param <V> record value type
 */
@FunctionalInterface
public interface BatchHandler<K, V> {
    List<Outcome> handle(List<KeyedRecord<K, V>> batch) throws Exception;
}
