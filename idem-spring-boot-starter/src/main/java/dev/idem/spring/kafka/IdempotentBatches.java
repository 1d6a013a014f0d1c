package dev.idem.spring.kafka;

import dev.idem.spring.InProgressException;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.kafka.listener.BatchListenerFailedException;

/**
 * Runs a batch listener's records one by one through an {@code @Idempotent} method and tells spring-kafka which record
 * failed, so that the stock {@code DefaultErrorHandler} commits the records before it and treats the failed one as a
 * record listener's (back-off, the {@code IN_PROGRESS} rule, dead letter):
 *
 * <pre>{@code
 * @KafkaListener(topics = "payments", batch = "true")
 * public void onBatch(List<ConsumerRecord<String, String>> records) {
 *     IdempotentBatches.forEach(records, payments::apply);   // payments.apply is @Idempotent
 * }
 * }</pre>
 */
public final class IdempotentBatches {
    private IdempotentBatches() {}

    /** What the batch listener does with one record. */
    @FunctionalInterface
    public interface RecordAction<K, V> {
        void accept(ConsumerRecord<K, V> record) throws Exception;
    }

    /**
     * Applies {@code action} to each record in order; the first that throws stops the batch with a {@link
     * BatchListenerFailedException} naming that record.
     */
    public static <K, V> void forEach(List<ConsumerRecord<K, V>> records, RecordAction<K, V> action) {
        for (ConsumerRecord<K, V> record : records) {
            try {
                action.accept(record);
            } catch (InProgressException e) {
                throw new KeyInProgress(record, e);
            } catch (Exception e) {
                throw new RecordFailed(record, e);
            }
        }
    }

    /**
     * The exception that tells spring-kafka's {@code DefaultErrorHandler} that the element at {@code index} of a batch
     * failed with {@code cause} (the records before it are committed; {@link InProgressException} keeps its own
     * back-off class).
     */
    public static BatchListenerFailedException failedAt(int index, Exception cause) {
        return cause instanceof InProgressException ? new KeyInProgress(index, cause) : new RecordFailed(index, cause);
    }

    /*
     * Two classes, because spring-kafka restarts a record's back-off only when the exception's class changes: a record
     * that was FAILED and is now IN_PROGRESS must leave the bounded back-off for the unbounded one.
     */
    private static final class KeyInProgress extends BatchListenerFailedException {
        private static final long serialVersionUID = 1L;

        KeyInProgress(ConsumerRecord<?, ?> record, Exception cause) {
            super(String.valueOf(cause.getMessage()), cause, record);
        }

        KeyInProgress(int index, Exception cause) {
            super(String.valueOf(cause.getMessage()), cause, index);
        }
    }

    private static final class RecordFailed extends BatchListenerFailedException {
        private static final long serialVersionUID = 1L;

        RecordFailed(ConsumerRecord<?, ?> record, Exception cause) {
            super(String.valueOf(cause.getMessage()), cause, record);
        }

        RecordFailed(int index, Exception cause) {
            super(String.valueOf(cause.getMessage()), cause, index);
        }
    }
}
