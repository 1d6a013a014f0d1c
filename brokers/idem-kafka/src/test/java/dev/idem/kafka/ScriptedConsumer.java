package dev.idem.kafka;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetCommitCallback;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.jspecify.annotations.Nullable;

/**
 * A {@link MockConsumer} for driving the runner through exact interleavings: rebalances and failures are run on the
 * poll thread at a chosen moment ({@link #onPollThread}), commits can be made to fail, and every commit is checked
 * against what the consumer owned when it was made (a commit of a partition not owned is recorded as a violation). As
 * in the real clients, a {@link #wakeup()} is one flag that the next {@code poll} or {@code commitSync} throws and
 * clears.
 */
final class ScriptedConsumer extends MockConsumer<byte[], byte[]> {
    private final Set<TopicPartition> owned = new HashSet<>();
    private final Set<TopicPartition> paused = new HashSet<>();
    private final List<String> violations = new ArrayList<>();
    private final Map<TopicPartition, List<Long>> commits = new HashMap<>();
    private @Nullable KafkaException nextAsyncCommitFailure;
    private @Nullable KafkaException asyncCommitFailure;
    private @Nullable KafkaException nextSyncCommitFailure;
    private final AtomicBoolean woken = new AtomicBoolean();
    private volatile @Nullable Runnable beforeEachCommitSync;

    ScriptedConsumer() {
        super("earliest");
    }

    /** Partitions {@code 0..count-1} of {@code topic}, all starting at offset 0. */
    static List<TopicPartition> partitions(String topic, int count) {
        List<TopicPartition> partitions = new ArrayList<>();
        for (int p = 0; p < count; p++) {
            partitions.add(new TopicPartition(topic, p));
        }
        return partitions;
    }

    /** Runs {@code task} inside the runner's next {@code poll} (on its thread) and waits until it ran. */
    void onPollThread(Runnable task) throws InterruptedException {
        CountDownLatch ran = new CountDownLatch(1);
        schedulePollTask(() -> {
            task.run();
            ran.countDown();
        });
        if (!ran.await(KafkaFixture.WAIT.toSeconds(), TimeUnit.SECONDS)) {
            throw new AssertionError("the runner did not poll");
        }
    }

    /**
     * Waits for two more polls: the runner's loop then went once through applying finished tasks and committing after
     * the first.
     */
    void awaitLoopRound() throws InterruptedException {
        onPollThread(() -> {});
        onPollThread(() -> {});
    }

    /** Assigns {@code partitions} (revoking the others) on the poll thread, each starting at offset 0. */
    void assignNow(Collection<TopicPartition> partitions) throws InterruptedException {
        onPollThread(() -> {
            Map<TopicPartition, Long> beginning = new HashMap<>();
            partitions.forEach(tp -> beginning.put(tp, 0L));
            updateBeginningOffsets(beginning);
            rebalance(partitions);
        });
    }

    /** Adds a record keyed (header {@code idem-key}) {@code key}. */
    void add(TopicPartition tp, long offset, String key) {
        RecordHeaders headers = new RecordHeaders();
        headers.add(KafkaProducers.KEY_HEADER, key.getBytes(StandardCharsets.UTF_8));
        byte[] value = ("value of " + key).getBytes(StandardCharsets.UTF_8);
        addRecord(new ConsumerRecord<>(
                tp.topic(),
                tp.partition(),
                offset,
                0L,
                TimestampType.CREATE_TIME,
                0,
                value.length,
                null,
                value,
                headers,
                Optional.empty()));
    }

    synchronized void failNextAsyncCommit(KafkaException e) {
        nextAsyncCommitFailure = e;
    }

    /** Every asynchronous commit fails with {@code e} until called with null. */
    synchronized void failAsyncCommits(@Nullable KafkaException e) {
        asyncCommitFailure = e;
    }

    synchronized void failNextSyncCommit(KafkaException e) {
        nextSyncCommitFailure = e;
    }

    /**
     * The offset last committed for {@code tp}, or -1 (read from the commits made: {@link MockConsumer#committed}
     * answers 0 for a partition no longer assigned, and throws once closed).
     */
    synchronized long committedOffset(TopicPartition tp) {
        List<Long> made = commits.getOrDefault(tp, List.of());
        return made.isEmpty() ? -1 : made.get(made.size() - 1);
    }

    /** Every offset committed for {@code tp}, in order. */
    synchronized List<Long> commitsOf(TopicPartition tp) {
        return List.copyOf(commits.getOrDefault(tp, List.of()));
    }

    /** Commits made for partitions the consumer did not own at the time. */
    synchronized List<String> violations() {
        return List.copyOf(violations);
    }

    /** Runs {@code task} on the committing thread as each {@code commitSync} starts, before it sees a wakeup. */
    void beforeEachCommitSync(Runnable task) {
        beforeEachCommitSync = task;
    }

    @Override
    public void wakeup() {
        woken.set(true);
    }

    private void throwIfWoken() {
        if (woken.getAndSet(false)) {
            throw new WakeupException();
        }
    }

    @Override
    public synchronized ConsumerRecords<byte[], byte[]> poll(Duration timeout) {
        throwIfWoken();
        ConsumerRecords<byte[], byte[]> records = super.poll(timeout);
        if (records.isEmpty()) {
            // MockConsumer never blocks; a short park keeps an idle runner from spinning a core.
            LockSupport.parkNanos(Math.min(timeout.toNanos(), 1_000_000));
        }
        return records;
    }

    @Override
    public void subscribe(Collection<String> topics, ConsumerRebalanceListener listener) {
        super.subscribe(topics, new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                listener.onPartitionsRevoked(partitions);
                disown(partitions);
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> partitions) {
                disown(partitions);
                listener.onPartitionsLost(partitions);
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                synchronized (ScriptedConsumer.this) {
                    owned.addAll(partitions);
                }
                listener.onPartitionsAssigned(partitions);
            }
        });
    }

    private synchronized void disown(Collection<TopicPartition> partitions) {
        owned.removeAll(partitions);
        paused.removeAll(partitions);
    }

    /**
     * The partitions paused now: {@link MockConsumer#paused()} still lists a partition paused before it was revoked
     * and assigned again, which a real consumer does not.
     */
    synchronized Set<TopicPartition> pausedNow() {
        return Set.copyOf(paused);
    }

    @Override
    public synchronized void pause(Collection<TopicPartition> partitions) {
        super.pause(partitions);
        paused.addAll(partitions);
    }

    @Override
    public synchronized void resume(Collection<TopicPartition> partitions) {
        super.resume(partitions);
        paused.removeAll(partitions);
    }

    @Override
    public synchronized void commitAsync(
            Map<TopicPartition, OffsetAndMetadata> offsets, OffsetCommitCallback callback) {
        KafkaException failure = nextAsyncCommitFailure != null ? nextAsyncCommitFailure : asyncCommitFailure;
        if (failure != null) {
            nextAsyncCommitFailure = null;
            if (callback != null) {
                callback.onComplete(offsets, failure);
            }
            return;
        }
        record(offsets);
        super.commitAsync(offsets, callback);
    }

    @Override
    public synchronized void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets) {
        Runnable before = beforeEachCommitSync;
        if (before != null) {
            before.run();
        }
        throwIfWoken();
        KafkaException failure = nextSyncCommitFailure;
        if (failure != null) {
            nextSyncCommitFailure = null;
            throw failure;
        }
        record(offsets);
        super.commitAsync(offsets, null);
    }

    private void record(Map<TopicPartition, OffsetAndMetadata> offsets) {
        offsets.forEach((tp, offset) -> {
            if (!owned.contains(tp)) {
                violations.add("committed " + tp + "@" + offset.offset() + " while not owning it");
            }
            commits.computeIfAbsent(tp, t -> new ArrayList<>()).add(offset.offset());
        });
    }
}
