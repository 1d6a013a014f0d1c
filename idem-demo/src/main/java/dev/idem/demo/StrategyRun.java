package dev.idem.demo;

import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.demo.ConsumerFaults.Fault;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.jspecify.annotations.Nullable;

/**
 * Consumes the whole order topic for one strategy in its own consumer group, with manual offset commits, and
 * injects the consumer-side faults: a second copy handed to another consumer while the first is still being handled
 * (timeout) or at the same instant (concurrent), and crashes after the database commit and before the offset commit
 * (the consumer is closed without committing and a new one re-reads from the last committed offset).
 *
 * <p>{@code RETRY} outcomes pause the partition, seek back and retry after a backoff (order within a partition is
 * kept); after the bound, and for {@code REJECTED}, the message goes to the strategy's dead-letter table.
 */
final class StrategyRun {
    static final RetryPolicy RETRY = new RetryPolicy(Duration.ofMillis(10), 1.5, Duration.ofMillis(100), 300, 0.2);
    private static final Duration OVERLAP_WAIT = Duration.ofSeconds(2);
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(StrategyRun.class);
    private static final int LOGGED_RETRIES = 20;

    private final Strategy strategy;
    private final LabDatabase db;
    private final String bootstrap;
    private final String topic;
    private final Map<TopicPartition, Long> endOffsets;
    private final ConsumerFaults faults;
    private final ExecutorService secondConsumer;
    private final Set<String> crashedOnce = ConcurrentHashMap.newKeySet();
    private final Set<String> copiedOnce = ConcurrentHashMap.newKeySet();
    private final Map<TopicPartition, Long> committed = new ConcurrentHashMap<>();

    final AtomicLong deliveries = new AtomicLong();
    final AtomicLong processed = new AtomicLong();
    final AtomicLong duplicates = new AtomicLong();
    final AtomicLong retries = new AtomicLong();
    final AtomicLong deadLetters = new AtomicLong();
    final AtomicLong crashes = new AtomicLong();
    final AtomicLong secondCopies = new AtomicLong();
    final AtomicLong secondCopiesApplied = new AtomicLong();
    private long pollNanos;
    private long handleNanos;
    private long crashNanos;
    private long emptyPolls;
    private volatile long startNanos;
    private volatile long endNanos;
    private volatile @Nullable Throwable failure;

    StrategyRun(
            Strategy strategy,
            LabDatabase db,
            String bootstrap,
            String topic,
            Map<TopicPartition, Long> endOffsets,
            ConsumerFaults faults,
            ExecutorService secondConsumer) {
        this.strategy = strategy;
        this.db = db;
        this.bootstrap = bootstrap;
        this.topic = topic;
        this.endOffsets = Map.copyOf(endOffsets);
        this.faults = faults;
        this.secondConsumer = secondConsumer;
    }

    Strategy strategy() {
        return strategy;
    }

    /** Offsets committed so far, over all partitions: progress. */
    long committedRecords() {
        return committed.values().stream().mapToLong(Long::longValue).sum();
    }

    Duration elapsed() {
        long end = endNanos == 0 ? System.nanoTime() : endNanos;
        return Duration.ofNanos(startNanos == 0 ? 0 : end - startNanos);
    }

    java.util.Optional<Throwable> failure() {
        return java.util.Optional.ofNullable(failure);
    }

    boolean finished() {
        return endOffsets.entrySet().stream().allMatch(e -> committed.getOrDefault(e.getKey(), 0L) >= e.getValue());
    }

    /** Consumes until every partition's committed offset reaches its end, or {@code deadline} passes. */
    void run(long deadlineNanos) {
        startNanos = System.nanoTime();
        try {
            KafkaConsumer<byte[], byte[]> consumer = newConsumer();
            Map<TopicPartition, Long> resumeAt = new HashMap<>();
            Map<String, Integer> attempts = new HashMap<>();
            try {
                while (!finished() && System.nanoTime() < deadlineNanos) {
                    long t0 = System.nanoTime();
                    ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(50));
                    long t1 = System.nanoTime();
                    pollNanos += t1 - t0;
                    if (records.isEmpty()) {
                        emptyPolls++;
                    }
                    resumeDue(consumer, resumeAt);
                    Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
                    try {
                        for (TopicPartition tp : records.partitions()) {
                            handlePartition(consumer, tp, records.records(tp), commit, resumeAt, attempts);
                        }
                    } catch (Crash crash) {
                        handleNanos += System.nanoTime() - t1;
                        long c0 = System.nanoTime();
                        crashes.incrementAndGet();
                        consumer.close(Duration.ofSeconds(5));
                        consumer = newConsumer();
                        resumeAt.clear();
                        crashNanos += System.nanoTime() - c0;
                        continue;
                    }
                    handleNanos += System.nanoTime() - t1;
                    if (!commit.isEmpty()) {
                        consumer.commitSync(commit);
                        commit.forEach((tp, o) -> committed.put(tp, o.offset()));
                    }
                }
            } finally {
                consumer.close(Duration.ofSeconds(5));
                LOG.warn("{}: poll {} ms ({} empty), handle {} ms, crash restarts {} ms", strategy.id(), pollNanos / 1_000_000, emptyPolls, handleNanos / 1_000_000, crashNanos / 1_000_000);
            }
        } catch (RuntimeException | Error e) {
            failure = e;
        } finally {
            endNanos = System.nanoTime();
        }
    }

    private void handlePartition(
            KafkaConsumer<byte[], byte[]> consumer,
            TopicPartition tp,
            List<ConsumerRecord<byte[], byte[]>> records,
            Map<TopicPartition, OffsetAndMetadata> commit,
            Map<TopicPartition, Long> resumeAt,
            Map<String, Integer> attempts) {
        for (ConsumerRecord<byte[], byte[]> record : records) {
            OrderEvent event;
            try {
                event = OrderEvent.decode(record.value());
            } catch (RuntimeException e) {
                deadLetter("offset " + tp + "@" + record.offset(), "undecodable value: " + e.getMessage());
                commit.put(tp, new OffsetAndMetadata(record.offset() + 1));
                continue;
            }
            Outcome outcome = deliver(event);
            String attemptKey = tp + "@" + record.offset();
            if (outcome.action() == Outcome.Action.RETRY) {
                logRetry(event, outcome);
                int attempt = attempts.merge(attemptKey, 1, Integer::sum);
                if (!RETRY.exhausted(attempt)) {
                    // An IN_PROGRESS outcome suggests waiting until the holder's lease ends; the holder usually
                    // finishes long before, so the backoff caps it.
                    Duration backoff = RETRY.delayAfter(attempt);
                    Duration delay = outcome.retryAfter()
                            .filter(d -> d.compareTo(backoff) < 0)
                            .orElse(backoff);
                    consumer.seek(tp, record.offset());
                    consumer.pause(List.of(tp));
                    resumeAt.put(tp, System.nanoTime() + delay.toNanos());
                    return;
                }
                deadLetter(event.key(), "gave up after " + attempt + " attempts: " + outcome.reason());
            } else if (outcome.action() == Outcome.Action.DEAD_LETTER) {
                deadLetter(event.key(), outcome.reason());
            }
            attempts.remove(attemptKey);
            commit.put(tp, new OffsetAndMetadata(record.offset() + 1));
            if (faults.of(event.key()) == Fault.CRASH && crashedOnce.add(event.key())) {
                throw new Crash();
            }
        }
    }

    /** The first copy on this thread; for TIMEOUT and CONCURRENT messages a second copy on another consumer. */
    private Outcome deliver(OrderEvent event) {
        deliveries.incrementAndGet();
        Fault fault = faults.of(event.key());
        if ((fault != Fault.TIMEOUT && fault != Fault.CONCURRENT) || !copiedOnce.add(event.key())) {
            return count(strategy.handle(Delivery.plain(event)));
        }
        secondCopies.incrementAndGet();
        Overlap overlap = new Overlap(event, fault);
        Future<?> second = secondConsumer.submit(overlap::secondCopy);
        Outcome first = count(strategy.handle(overlap.firstCopy()));
        try {
            second.get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("the second consumer's copy of " + event.key() + " did not end", e);
        }
        return first;
    }

    private void logRetry(OrderEvent event, Outcome outcome) {
        if (retries.incrementAndGet() <= LOGGED_RETRIES) {
            LOG.warn("{} retries {} later: {}", strategy.id(), event.key(), outcome);
        }
    }

    private Outcome count(Outcome outcome) {
        switch (outcome.type()) {
            case PROCESSED -> processed.incrementAndGet();
            case DUPLICATE -> duplicates.incrementAndGet();
            default -> {}
        }
        return outcome;
    }

    private void deadLetter(String key, String reason) {
        deadLetters.incrementAndGet();
        try {
            db.deadLetter(strategy.prefix(), key, reason);
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException("cannot record a dead letter: " + e.getMessage(), e);
        }
    }

    private static void resumeDue(KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, Long> resumeAt) {
        long now = System.nanoTime();
        List<TopicPartition> due = new ArrayList<>();
        resumeAt.forEach((tp, at) -> {
            if (at <= now) {
                due.add(tp);
            }
        });
        if (!due.isEmpty()) {
            due.forEach(resumeAt::remove);
            consumer.resume(due);
        }
    }

    private KafkaConsumer<byte[], byte[]> newConsumer() {
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, "idem-lab-" + strategy.id() + "-" + topic);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 100);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "idem-lab-" + strategy.id());
        KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        consumer.subscribe(List.of(topic));
        return consumer;
    }

    /** Two copies of one message that overlap in time. */
    private final class Overlap {
        private final OrderEvent event;
        private final Fault fault;
        private final CountDownLatch firstInside = new CountDownLatch(1);
        private final CountDownLatch secondStarted = new CountDownLatch(1);
        private final CyclicBarrier together = new CyclicBarrier(2);

        Overlap(OrderEvent event, Fault fault) {
            this.event = event;
            this.fault = fault;
        }

        Delivery firstCopy() {
            if (fault == Fault.CONCURRENT) {
                awaitTogether();
                return Delivery.plain(event);
            }
            return new Delivery() {
                @Override
                public OrderEvent event() {
                    return event;
                }

                @Override
                public void insideEffect() throws InterruptedException {
                    if (firstInside.getCount() == 0) {
                        return;
                    }
                    firstInside.countDown();
                    // The slow first consumer: the broker has redelivered; let the second copy get going.
                    secondStarted.await(OVERLAP_WAIT.toMillis(), TimeUnit.MILLISECONDS);
                    Thread.sleep(20);
                }
            };
        }

        void secondCopy() {
            if (fault == Fault.CONCURRENT) {
                awaitTogether();
            } else {
                try {
                    firstInside.await(OVERLAP_WAIT.toMillis(), TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                secondStarted.countDown();
            }
            for (int attempt = 1; ; attempt++) {
                Outcome outcome = strategy.handle(Delivery.plain(event));
                deliveries.incrementAndGet();
                count(outcome);
                if (outcome.type() == Outcome.Type.PROCESSED) {
                    secondCopiesApplied.incrementAndGet();
                }
                if (outcome.action() != Outcome.Action.RETRY || RETRY.exhausted(attempt)) {
                    return;
                }
                logRetry(event, outcome);
                try {
                    Thread.sleep(RETRY.delayAfter(attempt).toMillis());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }

        private void awaitTogether() {
            try {
                together.await(OVERLAP_WAIT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                // the other copy did not come: each goes on alone
            }
        }
    }

    /** The injected crash: thrown after the database commit, before the offset commit. */
    private static final class Crash extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Crash() {
            super("injected crash", null, false, false);
        }
    }
}
