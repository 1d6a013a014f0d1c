package dev.idem.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.jspecify.annotations.Nullable;

/**
 * The poll thread: owns the Kafka consumer, hands fetched records to lanes, commits what is final and keeps the group
 * membership alive.
 *
 * <p>It never sleeps while finished work waits: while tasks run it polls for at most {@link #BUSY_POLL}, and each
 * task that ends unparks it. It never blocks in {@code poll} while a partition it paused may hold fetched records (a
 * blocking poll then spins in the KIP-848 consumer of kafka-clients 4.x): with a partition paused it polls without
 * waiting and parks on its own signal instead. Offsets are committed asynchronously in the loop (at most every {@link
 * #COMMIT_INTERVAL}), synchronously on revocation and close.
 */
final class PollLoop<K, V> implements Runnable {
    private static final System.Logger LOG = System.getLogger(PollLoop.class.getName());
    /** Longest poll while tasks run: bounds how long the loop takes to see a finished task. */
    static final Duration BUSY_POLL = Duration.ofMillis(5);
    /**
     * Shortest time between two asynchronous commits. Under {@code group.protocol=consumer} each {@code commitAsync}
     * waits for the client's background thread to take the offsets (a thread hand-off: 10-25 ms each in a JFR
     * recording at load 20), and the loop committed at every round. Revocation and close still commit every finished
     * record at once; a crash redelivers at most this much more work, answered {@code DUPLICATE}.
     */
    static final Duration COMMIT_INTERVAL = Duration.ofMillis(100);
    /** Longest park while a partition is paused. */
    private static final long PAUSED_PARK_NANOS = Duration.ofMillis(5).toNanos();

    private record Waiting<K, V>(Lane<K, V> lane, long atNanos) {}

    private final Settings<K, V> settings;
    private final Consumer<byte[], byte[]> consumer;
    private final ExecutorService executor;
    private final DeadLetterPublisher deadLetters;
    private final Events events;
    private final ConcurrentLinkedQueue<LaneWorker.End<K, V>> ends = new ConcurrentLinkedQueue<>();
    private final AtomicInteger running = new AtomicInteger();
    private final LaneWorker<K, V> worker;
    private final Map<TopicPartition, PartitionWork<K, V>> partitions = new HashMap<>();
    private final PriorityQueue<Waiting<K, V>> waiting =
            new PriorityQueue<>((a, b) -> Long.compare(a.atNanos(), b.atNanos()));
    private final @Nullable Set<Lane<K, V>> watched;
    private final int maxBuffered;
    private final CountDownLatch stopped = new CountDownLatch(1);
    /**
     * The client is woken once, whoever calls {@link #stop()} and how often: {@link #outlastingWakeup} retries a woken
     * call once, which a second wakeup would fail too.
     */
    private final AtomicBoolean woken = new AtomicBoolean();

    private volatile boolean stopping;
    /** Set before the workers are interrupted on the way out: a handler failing now failed of that interrupt. */
    private volatile boolean handlersInterrupted;

    private volatile @Nullable Thread thread;
    private volatile Set<TopicPartition> assignment = Set.of();
    private volatile @Nullable Throwable failure;
    /** An {@link Error} ended the loop: like a crash, nothing more is committed. Poll thread only. */
    private boolean crashed;

    private int pausedCount;
    /** When the last asynchronous commit was sent ({@link System#nanoTime()}). Poll thread only. */
    private long lastCommitNanos;
    /** Finished records wait for {@link #COMMIT_INTERVAL} to pass: the poll must not block beyond it. */
    private boolean commitDue;

    PollLoop(
            Settings<K, V> settings,
            Consumer<byte[], byte[]> consumer,
            ExecutorService executor,
            DeadLetterPublisher deadLetters,
            Events events) {
        this.settings = settings;
        this.consumer = consumer;
        this.executor = executor;
        this.deadLetters = deadLetters;
        this.events = events;
        this.watched = settings.handlerTimeout() == null ? null : ConcurrentHashMap.newKeySet();
        this.maxBuffered = settings.maxBufferedPerPartition();
        this.lastCommitNanos = System.nanoTime() - COMMIT_INTERVAL.toNanos();
        this.worker = new LaneWorker<>(
                settings, deadLetters, events, ends, running, () -> stopping, () -> handlersInterrupted, this::wake);
    }

    @Override
    public void run() {
        thread = Thread.currentThread();
        try {
            consumer.subscribe(settings.topics(), new Rebalance());
            while (!stopping && applyEnds()) {
                startDueRetries();
                // Read before committing: a task that ends after this has finished its records before, and they
                // are committed by the next round, which then polls briefly.
                boolean busy = running.get() > 0;
                interruptOverdueHandlers();
                commitAsync();
                flowControl();
                accept(poll(busy));
            }
            if (failure == null) {
                finishInFlight();
            }
            if (!crashed) {
                commitSync(partitions.values());
            }
        } catch (RuntimeException | Error e) {
            crashed |= e instanceof Error;
            fail(e);
            if (!crashed) {
                // Not left to the client's close(): it calls onPartitionsLost, not revoked, during a rebalance.
                commitSync(partitions.values());
            }
        } finally {
            stopping = true;
            handlersInterrupted = true;
            executor.shutdownNow();
            try {
                consumer.close(CloseOptions.timeout(Duration.ofSeconds(10)));
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, settings.name() + ": consumer close failed: " + e);
            }
            deadLetters.close();
            assignment = Set.of();
            stopped.countDown();
        }
    }

    /** Asks the loop to stop (waking a poll that waits for records); it lets each lane finish its record, commits, closes the clients. */
    void stop() {
        stopping = true;
        wake();
        if (woken.compareAndSet(false, true)) {
            consumer.wakeup();
        }
    }

    boolean awaitStopped(Duration timeout) throws InterruptedException {
        return stopped.await(timeout.toNanos(), java.util.concurrent.TimeUnit.NANOSECONDS);
    }

    boolean isStopped() {
        return stopped.getCount() == 0;
    }

    Set<TopicPartition> assignment() {
        return assignment;
    }

    @Nullable
    Throwable failure() {
        return failure;
    }

    /** Handlers that ran past the handler timeout, readable; empty without a timeout. */
    List<String> overdueHandlers() {
        List<String> overdue = new ArrayList<>();
        Duration timeout = settings.handlerTimeout();
        if (watched == null || timeout == null) {
            return overdue;
        }
        long now = settings.nanoTime().getAsLong();
        for (Lane<K, V> lane : watched) {
            long[] call = lane.handlerCall(now);
            if (call != null && call[1] >= timeout.toNanos()) {
                overdue.add(lane.partition.tp + "@" + call[0] + ": handler running for "
                        + Duration.ofNanos(call[1]).toMillis() + " ms (timeout " + timeout.toMillis()
                        + " ms; interrupted, has not returned)");
            }
        }
        return overdue;
    }

    private void wake() {
        Thread t = thread;
        if (t != null) {
            LockSupport.unpark(t);
        }
    }

    private void fail(Throwable e) {
        if (failure == null) {
            failure = e;
        }
        LOG.log(
                System.Logger.Level.ERROR,
                "consumer " + settings.name() + " stopped"
                        + (crashed ? " without committing (an Error is a crash)" : "") + ": " + e,
                e);
    }

    /** Applies the ends of lane tasks; false when one failed (the loop stops). */
    private boolean applyEnds() {
        LaneWorker.End<K, V> end;
        while ((end = ends.poll()) != null) {
            if (end.error() != null) {
                crashed = end.error() instanceof Error;
                fail(end.error());
                return false;
            }
            Lane<K, V> lane = end.lane();
            if (lane.partition.revoked) {
                continue;
            }
            if (end.retrying()) {
                waiting.add(new Waiting<>(lane, end.retryAtNanos()));
            } else {
                lane.partition.forgetIfIdle(lane);
            }
        }
        return true;
    }

    private void startDueRetries() {
        long now = settings.nanoTime().getAsLong();
        while (!waiting.isEmpty() && waiting.peek().atNanos() - now <= 0) {
            Lane<K, V> lane = waiting.poll().lane();
            if (!lane.partition.revoked) {
                submit(lane);
            }
        }
    }

    private void interruptOverdueHandlers() {
        Duration timeout = settings.handlerTimeout();
        if (watched == null || timeout == null) {
            return;
        }
        long now = settings.nanoTime().getAsLong();
        for (Lane<K, V> lane : watched) {
            long offset = lane.interruptIfOverdue(now, timeout.toNanos());
            if (offset >= 0) {
                events.handlerTimeout(lane.partition.tp, offset, timeout);
            }
        }
    }

    /** Commits the finished records asynchronously, or, within {@link #COMMIT_INTERVAL} of the last commit, notes
     * when to. */
    private void commitAsync() {
        long now = System.nanoTime();
        boolean due = now - lastCommitNanos >= COMMIT_INTERVAL.toNanos();
        commitDue = false;
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (PartitionWork<K, V> work : partitions.values()) {
            long offset = work.progress.toCommit();
            if (offset >= 0) {
                if (!due) {
                    commitDue = true;
                    return;
                }
                offsets.put(work.tp, new OffsetAndMetadata(offset));
                work.progress.committed(offset);
            }
        }
        if (offsets.isEmpty()) {
            return;
        }
        lastCommitNanos = now;
        consumer.commitAsync(offsets, (done, error) -> {
            if (error != null) {
                LOG.log(
                        System.Logger.Level.DEBUG,
                        () -> settings.name() + ": commit of " + offsets + " failed, retried: " + error);
                offsets.forEach((tp, offset) -> {
                    PartitionWork<K, V> work = partitions.get(tp);
                    if (work != null) {
                        work.progress.commitFailed(offset.offset());
                    }
                });
            } else {
                done.forEach((tp, offset) -> events.committed(tp, offset.offset()));
            }
        });
    }

    private void commitSync(Collection<PartitionWork<K, V>> works) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (PartitionWork<K, V> work : works) {
            long offset = work.progress.position();
            if (offset >= 0) {
                offsets.put(work.tp, new OffsetAndMetadata(offset));
            }
        }
        if (offsets.isEmpty()) {
            return;
        }
        try {
            outlastingWakeup(() -> consumer.commitSync(offsets));
            offsets.forEach((tp, offset) -> events.committed(tp, offset.offset()));
        } catch (RuntimeException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    settings.name() + ": commit of " + offsets + " failed (those records will be redelivered and"
                            + " answered DUPLICATE): " + e);
        }
    }

    private void flowControl() {
        List<TopicPartition> pause = new ArrayList<>();
        List<TopicPartition> resume = new ArrayList<>();
        for (PartitionWork<K, V> work : partitions.values()) {
            int held = work.progress.unfinishedCount();
            if (!work.paused && held >= maxBuffered) {
                work.paused = true;
                pause.add(work.tp);
            } else if (work.paused && held <= maxBuffered / 2) {
                work.paused = false;
                resume.add(work.tp);
            }
        }
        if (!pause.isEmpty()) {
            consumer.pause(pause);
        }
        if (!resume.isEmpty()) {
            consumer.resume(resume);
        }
        pausedCount += pause.size() - resume.size();
    }

    private ConsumerRecords<byte[], byte[]> poll(boolean busy) {
        long untilDue = waiting.isEmpty()
                ? Long.MAX_VALUE
                : Math.max(0, waiting.peek().atNanos() - settings.nanoTime().getAsLong());
        if (commitDue) {
            untilDue = Math.min(untilDue, Math.max(0, lastCommitNanos + COMMIT_INTERVAL.toNanos() - System.nanoTime()));
        }
        if (pausedCount > 0) {
            ConsumerRecords<byte[], byte[]> records = pollUnlessWoken(Duration.ZERO);
            if (records.isEmpty()) {
                LockSupport.parkNanos(Math.min(PAUSED_PARK_NANOS, untilDue));
            }
            return records;
        }
        Duration timeout = busy ? BUSY_POLL : settings.pollTimeout();
        return pollUnlessWoken(Duration.ofNanos(Math.min(timeout.toNanos(), untilDue)));
    }

    /** Empty when {@link #stop()} woke the poll (the loop then sees {@code stopping}). */
    private ConsumerRecords<byte[], byte[]> pollUnlessWoken(Duration timeout) {
        try {
            return consumer.poll(timeout);
        } catch (WakeupException e) {
            return ConsumerRecords.empty();
        }
    }

    /**
     * Runs a blocking client call that the wakeup of {@link #stop()} may hit instead of the poll it was meant for; the
     * throw spends the wakeup, so the second try runs through.
     */
    private static void outlastingWakeup(Runnable call) {
        try {
            call.run();
        } catch (WakeupException e) {
            call.run();
        }
    }

    private void accept(ConsumerRecords<byte[], byte[]> records) {
        for (TopicPartition tp : records.partitions()) {
            PartitionWork<K, V> work = partitions.get(tp);
            if (work == null) {
                continue;
            }
            for (ConsumerRecord<byte[], byte[]> raw : records.records(tp)) {
                Pending<K, V> p = new Pending<>(raw, work.progress.track(raw.offset()));
                Lane<K, V> lane = work.lane(settings.ordering() == Ordering.KEY ? laneKey(p) : "");
                lane.mailbox.add(p);
                if (lane.scheduled.compareAndSet(false, true)) {
                    submit(lane);
                }
            }
        }
    }

    /** The record's idempotency key, or "" for a record that cannot be read (no key is blank). */
    private String laneKey(Pending<K, V> p) {
        KeyedRecord<K, V> read = worker.read(p).record();
        return read == null ? "" : read.key();
    }

    private void submit(Lane<K, V> lane) {
        running.incrementAndGet();
        executor.execute(() -> worker.run(lane));
    }

    /** Lets each running lane finish its record (up to the shutdown timeout); their results are committed after. */
    private void finishInFlight() {
        consumer.pause(consumer.assignment());
        long deadline = System.nanoTime() + settings.shutdownTimeout().toNanos();
        while (running.get() > 0 && System.nanoTime() - deadline < 0) {
            pollUnlessWoken(Duration.ZERO);
            LockSupport.parkNanos(PAUSED_PARK_NANOS);
        }
        LaneWorker.End<K, V> end;
        while ((end = ends.poll()) != null) {
            if (end.error() instanceof Error) {
                crashed = true;
                fail(end.error());
            }
        }
    }

    private final class Rebalance implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
            List<PartitionWork<K, V>> given = new ArrayList<>();
            for (TopicPartition tp : revoked) {
                PartitionWork<K, V> work = partitions.remove(tp);
                if (work != null) {
                    work.revoked = true;
                    pausedCount -= work.paused ? 1 : 0;
                    given.add(work);
                }
            }
            if (!crashed) {
                commitSync(given);
            }
            assignment = Set.copyOf(partitions.keySet());
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> lost) {
            for (TopicPartition tp : lost) {
                PartitionWork<K, V> work = partitions.remove(tp);
                if (work != null) {
                    work.revoked = true;
                    pausedCount -= work.paused ? 1 : 0;
                }
            }
            assignment = Set.copyOf(partitions.keySet());
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
            for (TopicPartition tp : assigned) {
                partitions.computeIfAbsent(tp, t -> new PartitionWork<>(t, settings.ordering(), watched));
            }
            if (settings.commitPositionOnAssignment() && !assigned.isEmpty()) {
                outlastingWakeup(() -> commitPositionsWithoutOffset(assigned));
            }
            assignment = Set.copyOf(partitions.keySet());
        }

        /**
         * Under {@code auto.offset.reset=latest}, a partition with no committed offset starts at its end: a record
         * that was retrying when the partition moved (nothing committed yet) would be skipped by the next owner.
         * Committing the position at assignment makes the next owner start there instead.
         */
        private void commitPositionsWithoutOffset(Collection<TopicPartition> assigned) {
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(Set.copyOf(assigned));
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
            for (TopicPartition tp : assigned) {
                if (committed.get(tp) == null) {
                    offsets.put(tp, new OffsetAndMetadata(consumer.position(tp)));
                }
            }
            if (!offsets.isEmpty()) {
                consumer.commitSync(offsets);
            }
        }
    }
}
