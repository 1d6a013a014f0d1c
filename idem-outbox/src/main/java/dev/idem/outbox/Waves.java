package dev.idem.outbox;

import dev.idem.outbox.spi.OutboxPublisher;
import dev.idem.outbox.spi.OutboxRecord;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A batch's records queued per key, published wave by wave: each wave sends the head of every key's queue at once and
 * waits for all acknowledgements; an acknowledged head leaves its queue, a failed one ends its key for this batch.
 */
final class Waves {
    record Failure(OutboxRecord record, Throwable cause) {}

    record Result(List<OutboxRecord> acked, List<Failure> failed, boolean interrupted) {}

    private final Map<String, ArrayDeque<OutboxRecord>> queues = new LinkedHashMap<>();

    Waves(List<OutboxRecord> batch) {
        for (OutboxRecord r : batch) {
            queues.computeIfAbsent(r.key(), k -> new ArrayDeque<>()).add(r);
        }
    }

    boolean hasNext() {
        return !queues.isEmpty();
    }

    /**
     * Publishes the next wave and waits up to {@code timeout} for it, starting no publish once the timeout has passed
     * (a publisher that awaits each acknowledgement inside {@code publish}, as RabbitMQ's and NATS's do, would
     * otherwise stretch a wave over every key's latency, past the leases): the keys not started stay queued for the
     * next wave. An {@link Error} thrown by the publisher propagates (a crash: nothing of the batch is marked).
     * Interrupted: what was acknowledged so far is reported, the rest is neither acknowledged nor failed.
     */
    Result publishNext(OutboxPublisher publisher, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        List<OutboxRecord> wave = new ArrayList<>();
        List<CompletableFuture<Void>> pending = new ArrayList<>();
        for (ArrayDeque<OutboxRecord> queue : queues.values()) {
            if (!wave.isEmpty() && System.nanoTime() - deadline >= 0) {
                break;
            }
            OutboxRecord head = Objects.requireNonNull(queue.peekFirst());
            wave.add(head);
            pending.add(start(publisher, head));
        }
        boolean interrupted = false;
        try {
            CompletableFuture.allOf(pending.toArray(CompletableFuture[]::new))
                    .get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (ExecutionException | TimeoutException e) {
            // each record's own outcome is read below
        } catch (InterruptedException e) {
            interrupted = true;
        }
        List<OutboxRecord> acked = new ArrayList<>();
        List<Failure> failed = new ArrayList<>();
        for (int i = 0; i < wave.size(); i++) {
            OutboxRecord record = wave.get(i);
            CompletableFuture<Void> f = pending.get(i);
            if (f.isDone() && !f.isCompletedExceptionally()) {
                acked.add(record);
                ArrayDeque<OutboxRecord> queue = Objects.requireNonNull(queues.get(record.key()));
                queue.pollFirst();
                if (queue.isEmpty()) {
                    queues.remove(record.key());
                }
            } else {
                queues.remove(record.key());
                if (!interrupted) {
                    failed.add(new Failure(record, cause(f, timeout)));
                }
            }
        }
        return new Result(acked, failed, interrupted);
    }

    private static CompletableFuture<Void> start(OutboxPublisher publisher, OutboxRecord record) {
        try {
            return Objects.requireNonNull(publisher.publish(record), "an OutboxPublisher returned null");
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private static Throwable cause(CompletableFuture<Void> f, Duration timeout) {
        if (!f.isDone()) {
            return new TimeoutException("not acknowledged within the publish timeout of " + timeout);
        }
        try {
            f.join();
            throw new IllegalStateException("unreachable: the publish completed normally");
        } catch (CompletionException e) {
            return e.getCause() == null ? e : e.getCause();
        } catch (java.util.concurrent.CancellationException e) {
            return e;
        }
    }
}
