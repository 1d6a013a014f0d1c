package dev.idem.demo;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.StringSerializer;

/** Fails its first {@code failures} sends as an expired batch does; then stores each record. */
final class FailingProducer extends MockProducer<String, String> {
    private int failures;

    FailingProducer(int failures) {
        super(true, null, new StringSerializer(), new StringSerializer());
        this.failures = failures;
    }

    @Override
    public synchronized Future<RecordMetadata> send(ProducerRecord<String, String> record, Callback callback) {
        if (failures > 0) {
            failures--;
            TimeoutException expired = new TimeoutException("batch expired before it was sent");
            if (callback != null) {
                callback.onCompletion(null, expired);
            }
            return CompletableFuture.failedFuture(expired);
        }
        return super.send(record, callback);
    }
}
