package dev.idem.spring.kafka;

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
            } catch (Exception e) {
                throw new BatchListenerFailedException(String.valueOf(e.getMessage()), e, record);
            }
        }
    }

    /**
     * The exception that tells spring-kafka's {@code DefaultErrorHandler} that the element at {@code index} of a batch
     * failed with {@code cause} (the records before it are committed).
     */
    public static BatchListenerFailedException failedAt(int index, Exception cause) {
        return new BatchListenerFailedException(String.valueOf(cause.getMessage()), cause, index);
    }
}
