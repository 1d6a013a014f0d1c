package dev.idem.kafka;

import dev.idem.ConfigurationException;
import dev.idem.Outcome;
import dev.idem.spi.DeliveryDecision;
import dev.idem.spi.Verdict;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

/**
 * What a worker does with a lane: takes its records in order, reads each (deserialize, key), runs the handler (or
 * the batch handler), and settles each record as {@link DeliveryDecision} decides: final, retry later, or
 * dead-letter. Finished records are marked in their partition's progress at once, so a revocation commits them. A
 * record whose dead letter could not be sent is retried (the send, not the handler) and never committed before the
 * dead-letter topic took it.
 *
 * <p>A {@link ConfigurationException} thrown by the handler, the batch handler, the deserializers or the key extractor
 * (or the cause of a handler's outcome) is not the record's fault but the runner's setup (e.g. a store's table is
 * missing): retrying would dead-letter every record. It escapes the lane and stops the runner, the record not final.
 */
final class LaneWorker<K, V> {
    /** How a lane's task ended; read by the poll thread. */
    record End<K, V>(
            Lane<K, V> lane, long retryAtNanos, @Nullable Throwable error) {
        boolean retrying() {
            return retryAtNanos != Long.MIN_VALUE;
        }
    }

    private final Settings<K, V> settings;
    private final DeliveryDecision decision;
    private final DeadLetterPublisher deadLetters;
    private final Events events;
    private final ConcurrentLinkedQueue<End<K, V>> ends;
    private final AtomicInteger running;
    private final BooleanSupplier stopping;
    private final BooleanSupplier handlersInterrupted;
    private final Runnable wake;

    LaneWorker(
            Settings<K, V> settings,
            DeadLetterPublisher deadLetters,
            Events events,
            ConcurrentLinkedQueue<End<K, V>> ends,
            AtomicInteger running,
            BooleanSupplier stopping,
            BooleanSupplier handlersInterrupted,
            Runnable wake) {
        this.settings = settings;
        this.decision = DeliveryDecision.of(settings.retryPolicy());
        this.deadLetters = deadLetters;
        this.events = events;
        this.ends = ends;
        this.running = running;
        this.stopping = stopping;
        this.handlersInterrupted = handlersInterrupted;
        this.wake = wake;
    }

    /** Runs a scheduled lane until it is empty, must wait for a retry, or its partition is gone. */
    void run(Lane<K, V> lane) {
        long retryAt = Long.MIN_VALUE;
        Throwable error = null;
        try {
            retryAt = drain(lane);
        } catch (RuntimeException | Error e) {
            error = e;
        } finally {
            running.decrementAndGet();
            ends.add(new End<>(lane, retryAt, error));
            wake.run();
        }
    }

    private long drain(Lane<K, V> lane) {
        int batchSize = settings.batchHandler() != null ? settings.maxBatchSize() : 1;
        while (true) {
            if (lane.partition.revoked || stopping.getAsBoolean()) {
                return Long.MIN_VALUE;
            }
            List<Pending<K, V>> work = take(lane, batchSize);
            if (work.isEmpty()) {
                lane.scheduled.set(false);
                if (lane.mailbox.isEmpty() || !lane.scheduled.compareAndSet(false, true)) {
                    return Long.MIN_VALUE;
                }
                continue;
            }
            Duration retry = settings.batchHandler() != null ? handleBatch(lane, work) : handleOne(lane, work.get(0));
            if (retry != null) {
                return settings.nanoTime().getAsLong() + retry.toNanos();
            }
        }
    }

    private static <K, V> List<Pending<K, V>> take(Lane<K, V> lane, int max) {
        List<Pending<K, V>> work = new ArrayList<>(Math.min(max, 64));
        while (work.size() < max) {
            Pending<K, V> next = lane.carry.pollFirst();
            if (next == null) {
                next = lane.mailbox.poll();
            }
            if (next == null) {
                break;
            }
            work.add(next);
        }
        return work;
    }

    /** One record; returns the retry delay, or null when it is final. */
    private @Nullable Duration handleOne(Lane<K, V> lane, Pending<K, V> p) {
        Duration retry = p.deadLetter != null ? deadLetter(p) : settle(p, run(lane, p));
        finishOrCarry(lane, List.of(p), retry == null ? List.of() : List.of(p));
        return retry;
    }

    private @Nullable Duration handleBatch(Lane<K, V> lane, List<Pending<K, V>> work) {
        List<Pending<K, V>> handled = new ArrayList<>(work.size());
        List<Pending<K, V>> retrying = new ArrayList<>();
        Duration firstRetry = null;
        List<KeyedRecord<K, V>> batch = new ArrayList<>(work.size());
        for (Pending<K, V> p : work) {
            Pending.Read<K, V> read = read(p);
            if (p.deadLetter == null && read.rejection() != null) {
                p.deadLetter = read.rejection();
            }
            if (p.deadLetter != null) {
                Duration retry = deadLetter(p);
                if (retry != null) {
                    retrying.add(p);
                    firstRetry = min(firstRetry, retry);
                }
            } else {
                handled.add(p);
                batch.add(Objects.requireNonNull(read.record()));
            }
        }
        if (!batch.isEmpty()) {
            List<Verdict> verdicts = runBatch(lane, handled, batch);
            for (int i = 0; i < handled.size(); i++) {
                Duration retry = settle(handled.get(i), verdicts.get(i));
                if (retry != null) {
                    retrying.add(handled.get(i));
                    firstRetry = min(firstRetry, retry);
                }
            }
        }
        retrying.sort((a, b) -> Long.compare(a.raw.offset(), b.raw.offset()));
        finishOrCarry(lane, work, retrying);
        return firstRetry;
    }

    private static @Nullable Duration min(@Nullable Duration a, Duration b) {
        return a == null || b.compareTo(a) < 0 ? b : a;
    }

    /** Marks every record of {@code work} not in {@code retrying} final, and puts {@code retrying} first in line. */
    private static <K, V> void finishOrCarry(Lane<K, V> lane, List<Pending<K, V>> work, List<Pending<K, V>> retrying) {
        for (Pending<K, V> p : work) {
            if (!retrying.contains(p)) {
                lane.partition.progress.finish(p.slot);
            }
        }
        for (int i = retrying.size() - 1; i >= 0; i--) {
            lane.carry.addFirst(retrying.get(i));
        }
    }

    /** Runs the record handler (unless the record cannot be handled) and decides what to do with the record. */
    private Verdict run(Lane<K, V> lane, Pending<K, V> p) {
        Pending.Read<K, V> read = read(p);
        if (read.rejection() != null) {
            return decision.decide(read.rejection(), p.attempts);
        }
        KeyedRecord<K, V> record = Objects.requireNonNull(read.record());
        RecordHandler<K, V> handler = Objects.requireNonNull(settings.handler());
        lane.enterHandler(p.raw.offset(), settings.nanoTime().getAsLong());
        try {
            p.runs++;
            Outcome outcome = misconfigurationStops(Objects.requireNonNull(
                    handler.handle(record.key(), record.record()), "a handler must return an Outcome, not null"));
            return decision.decide(outcome, p.attempts);
        } catch (ConfigurationException e) {
            throw e;
        } catch (Exception e) {
            return decision.decide(e, p.attempts);
        } finally {
            lane.exitHandler();
        }
    }

    private List<Verdict> runBatch(Lane<K, V> lane, List<Pending<K, V>> handled, List<KeyedRecord<K, V>> batch) {
        BatchHandler<K, V> handler = Objects.requireNonNull(settings.batchHandler());
        handled.forEach(p -> p.runs++);
        List<Outcome> outcomes;
        lane.enterHandler(handled.get(0).raw.offset(), settings.nanoTime().getAsLong());
        try {
            outcomes = handler.handle(List.copyOf(batch));
        } catch (ConfigurationException e) {
            throw e;
        } catch (Exception e) {
            return handled.stream().map(p -> decision.decide(e, p.attempts)).toList();
        } finally {
            lane.exitHandler();
        }
        if (outcomes == null
                || outcomes.size() != batch.size()
                || outcomes.stream().anyMatch(Objects::isNull)) {
            throw new IllegalStateException("the batch handler answered "
                    + (outcomes == null ? "null" : outcomes.size() + " outcomes") + " for " + batch.size()
                    + " records of " + lane.partition.tp
                    + ": it must answer one non-null Outcome per record, in order");
        }
        outcomes.forEach(LaneWorker::misconfigurationStops);
        List<Verdict> verdicts = new ArrayList<>(outcomes.size());
        for (int i = 0; i < outcomes.size(); i++) {
            verdicts.add(decision.decide(outcomes.get(i), handled.get(i).attempts));
        }
        return verdicts;
    }

    /** The outcome, unless a {@link ConfigurationException} caused it: that is thrown, to stop the runner. */
    private static Outcome misconfigurationStops(Outcome outcome) {
        if (outcome.cause().orElse(null) instanceof ConfigurationException misconfigured) {
            throw misconfigured;
        }
        return outcome;
    }

    /** Carries out {@code verdict}: the retry delay, or null when the record is final (handled or dead-lettered). */
    private @Nullable Duration settle(Pending<K, V> p, Verdict verdict) {
        if (!(verdict instanceof Verdict.Ack) && handlersInterrupted.getAsBoolean()) {
            // The runner stopped and interrupted the handler: not the record's failure. It is neither counted nor
            // dead-lettered; left uncommitted, it comes back to the next owner.
            return Duration.ZERO;
        }
        if (verdict instanceof Verdict.Retry retry) {
            p.attempts = retry.attempts();
            events.retryScheduled(p, retry.outcome(), retry.delay());
            return retry.delay();
        }
        if (verdict instanceof Verdict.DeadLetter dead) {
            p.attempts = dead.attempts();
            p.deadLetter = dead.outcome();
            return deadLetter(p);
        }
        return null;
    }

    /** Sends the decided dead letter; null when the topic took it, else the delay before trying again. */
    private @Nullable Duration deadLetter(Pending<K, V> p) {
        Outcome outcome = Objects.requireNonNull(p.deadLetter);
        String refused;
        try {
            refused = deadLetters.publish(p.raw, outcome, Math.max(1, p.runs), settings.name());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            refused = "interrupted while waiting for the acknowledgement";
        }
        if (refused == null) {
            events.deadLettered(p, outcome);
            return null;
        }
        p.deadLetterTries++;
        Duration delay = settings.retryPolicy().delayAfter(Math.min(p.deadLetterTries, 64));
        events.retryScheduled(
                p, Outcome.failed("the dead-letter topic did not take the record: " + refused, null), delay);
        return delay;
    }

    /** Deserializes the record and reads its key, once. */
    Pending.Read<K, V> read(Pending<K, V> p) {
        if (p.read == null) {
            p.read = readRecord(p.raw);
        }
        return p.read;
    }

    private Pending.Read<K, V> readRecord(ConsumerRecord<byte[], byte[]> raw) {
        ConsumerRecord<K, V> record;
        try {
            K key = raw.key() == null
                    ? null
                    : settings.keyDeserializer().deserialize(raw.topic(), raw.headers(), raw.key());
            V value = raw.value() == null
                    ? null
                    : settings.valueDeserializer().deserialize(raw.topic(), raw.headers(), raw.value());
            record = new ConsumerRecord<>(
                    raw.topic(),
                    raw.partition(),
                    raw.offset(),
                    raw.timestamp(),
                    raw.timestampType(),
                    raw.serializedKeySize(),
                    raw.serializedValueSize(),
                    key,
                    value,
                    raw.headers(),
                    raw.leaderEpoch());
        } catch (ConfigurationException e) {
            throw e;
        } catch (RuntimeException e) {
            return rejected(Outcome.rejected("record could not be deserialized: " + describe(e), e));
        }
        KeyExtractor<K, V> extractor = settings.keyExtractor();
        String key;
        try {
            key = extractor.extract(record);
        } catch (ConfigurationException e) {
            throw e;
        } catch (Exception e) {
            return rejected(
                    Outcome.rejected("idempotency key unreadable from " + extractor.describe() + ": " + describe(e)));
        }
        if (key == null || key.isBlank()) {
            return rejected(Outcome.rejected("no idempotency key: " + extractor.describe()
                    + " is missing or blank; the producer must stamp a key before the first send"));
        }
        return new Pending.Read<>(new KeyedRecord<>(key, record), null);
    }

    private static <K, V> Pending.Read<K, V> rejected(Outcome outcome) {
        return new Pending.Read<>(null, outcome);
    }

    private static String describe(Throwable e) {
        return e.getClass().getName() + ": " + e.getMessage();
    }
}
