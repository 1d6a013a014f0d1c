package dev.idem.outbox;

import dev.idem.outbox.spi.OutboxPublisher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * Publishes a batch in waves ({@link Waves}): each wave holds the next message of every key still going, so a key's
 * messages go out one after the other, in order, and a key stops at its first failure. Stops before a wave that could
 * outlast the shard leases. What the broker acknowledged goes to the {@link SentMarks}; failures to {@link
 * PublishFailures} once the batch is done.
 */
final class BatchPublisher {
    private final OutboxPublisher publisher;
    private final Duration publishTimeout;
    private final LongSupplier nanoTime;
    private final SentMarks marks;
    private final PublishFailures failures;

    BatchPublisher(
            OutboxPublisher publisher,
            Duration publishTimeout,
            LongSupplier nanoTime,
            SentMarks marks,
            PublishFailures failures) {
        this.publisher = publisher;
        this.publishTimeout = publishTimeout;
        this.nanoTime = nanoTime;
        this.marks = marks;
        this.failures = failures;
    }

    /** Publishes {@code batch} while the leases hold and the relay is not {@code closed}; returns how many acked. */
    int publish(List<DueMessages.Row> batch, long leasesValidUntilNanos, BooleanSupplier closed) {
        Waves waves = new Waves(batch.stream().map(DueMessages.Row::record).toList());
        List<Waves.Failure> failed = new ArrayList<>();
        int published = 0;
        while (waves.hasNext()
                && leasesValidUntilNanos - (nanoTime.getAsLong() + publishTimeout.toNanos()) > 0
                && !closed.getAsBoolean()) {
            Waves.Result result = waves.publishNext(publisher, publishTimeout);
            marks.acked(result.acked());
            published += result.acked().size();
            failed.addAll(result.failed());
            if (result.interrupted()) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        for (Waves.Failure f : failed) {
            DueMessages.Row row = batch.stream()
                    .filter(r -> r.record() == f.record())
                    .findFirst()
                    .orElseThrow();
            failures.record(row, f.cause());
        }
        return published;
    }
}
