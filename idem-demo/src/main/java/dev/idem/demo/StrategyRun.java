package dev.idem.demo;

import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.demo.ConsumerFaults.Fault;
import dev.idem.kafka.IdempotentKafkaConsumer;
import dev.idem.kafka.KafkaProducers;
import dev.idem.kafka.KeyExtractor;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Consumes the whole order topic for one strategy, in its own consumer group, with Idem's {@link
 * IdempotentKafkaConsumer} (manual commits, ordered retries with backoff, dead-letter topic), and injects the
 * consumer-side faults around the strategy's handler:
 *
 * <ul>
 *   <li>timeout: the first consumer is slow; a second consumer gets the same message while the first is still
 *       inside its effect (what Kafka does once {@code max.poll.interval.ms} has passed, without the seconds of a real
 *       rebalance);
 *   <li>concurrent: a second consumer gets the message at the same instant;
 *   <li>crash: after the handler committed its database transaction the consumer dies (the handler throws an {@link
 *       Error}, which stops the runner without committing the offset, like a killed process); a new consumer in the
 *       group re-reads everything after the last committed offset.
 * </ul>
 */
final class StrategyRun {
    static final RetryPolicy RETRY = RetryPolicy.builder()
            .initialDelay(Duration.ofMillis(10))
            .multiplier(1.5)
            .maxDelay(Duration.ofMillis(100))
            .maxAttempts(300)
            .jitter(0.2)
            .build();
    private static final Duration OVERLAP_WAIT = Duration.ofSeconds(2);
    private static final Logger LOG = LoggerFactory.getLogger(StrategyRun.class);
    private static final int LOGGED_RETRIES = 20;

    private final Strategy strategy;
    private final String bootstrap;
    private final String topic;
    private final String deadLetterTopic;
    private final Map<TopicPartition, Long> endOffsets;
    private final ConsumerFaults faults;
    private final ExecutorService secondConsumer;
    private final Admin admin;
    private final Set<String> crashedOnce = ConcurrentHashMap.newKeySet();
    private final Set<String> copiedOnce = ConcurrentHashMap.newKeySet();
    private volatile Map<TopicPartition, Long> committed = Map.of();

    final AtomicLong deliveries = new AtomicLong();
    final AtomicLong processed = new AtomicLong();
    final AtomicLong duplicates = new AtomicLong();
    final AtomicLong retries = new AtomicLong();
    final AtomicLong crashes = new AtomicLong();
    final AtomicLong secondCopies = new AtomicLong();
    private volatile long startNanos;
    private volatile long endNanos;
    private volatile @Nullable Throwable failure;

    StrategyRun(
            Strategy strategy,
            String bootstrap,
            String topic,
            Map<TopicPartition, Long> endOffsets,
            ConsumerFaults faults,
            ExecutorService secondConsumer,
            Admin admin) {
        this.strategy = strategy;
        this.bootstrap = bootstrap;
        this.topic = topic;
        this.deadLetterTopic = deadLetterTopic(topic, strategy);
        this.endOffsets = Map.copyOf(endOffsets);
        this.faults = faults;
        this.secondConsumer = secondConsumer;
        this.admin = admin;
    }

    static String deadLetterTopic(String topic, Strategy strategy) {
        return topic + "-" + strategy.id().replace('_', '-') + "-dlt";
    }

    Strategy strategy() {
        return strategy;
    }

    String group() {
        return "idem-lab-" + strategy.id() + "-" + topic;
    }

    String deadLetterTopic() {
        return deadLetterTopic;
    }

    /** Offsets committed so far, over all partitions: progress. */
    long committedRecords() {
        return committed.values().stream().mapToLong(Long::longValue).sum();
    }

    Duration elapsed() {
        long end = endNanos == 0 ? System.nanoTime() : endNanos;
        return Duration.ofNanos(startNanos == 0 ? 0 : end - startNanos);
    }

    Optional<Throwable> failure() {
        return Optional.ofNullable(failure);
    }

    boolean finished() {
        Map<TopicPartition, Long> c = committed;
        return endOffsets.entrySet().stream().allMatch(e -> c.getOrDefault(e.getKey(), 0L) >= e.getValue());
    }

    /** Consumes until the group's committed offsets reach the end of every partition, or the deadline passes. */
    void run(long deadlineNanos) {
        startNanos = System.nanoTime();
        IdempotentKafkaConsumer<byte[], byte[]> consumer = start();
        try {
            while (!finished() && System.nanoTime() < deadlineNanos) {
                Thread.sleep(50);
                if (!consumer.isRunning()) {
                    Throwable stopped = consumer.failure().orElse(null);
                    if (!(stopped instanceof InjectedCrash)) {
                        failure = stopped != null
                                ? stopped
                                : new IllegalStateException("the consumer of " + strategy.id() + " stopped");
                        return;
                    }
                    crashes.incrementAndGet();
                    consumer = start();
                }
                committed = committedOffsets();
            }
            if (!finished()) {
                failure = new IllegalStateException(strategy.id() + " did not consume the whole topic in time");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            failure = e;
        } catch (RuntimeException e) {
            failure = e;
        } finally {
            consumer.close();
            endNanos = System.nanoTime();
        }
    }

    private Map<TopicPartition, Long> committedOffsets() {
        try {
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group())
                    .partitionsToOffsetAndMetadata()
                    .get(10, TimeUnit.SECONDS);
            Map<TopicPartition, Long> result = new HashMap<>();
            offsets.forEach((tp, o) -> {
                if (o != null) {
                    result.put(tp, o.offset());
                }
            });
            return result;
        } catch (Exception e) {
            return committed;
        }
    }

    private IdempotentKafkaConsumer<byte[], byte[]> start() {
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 100);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "idem-lab-" + strategy.id());
        return IdempotentKafkaConsumer.builder(props)
                .keyDeserializer(new ByteArrayDeserializer())
                .valueDeserializer(new ByteArrayDeserializer())
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .handler(this::handle)
                .retryPolicy(RETRY)
                .deadLetterTopic(t -> deadLetterTopic)
                .workers(2)
                .pollTimeout(Duration.ofMillis(50))
                .build()
                .start();
    }

    private Outcome handle(String key, ConsumerRecord<byte[], byte[]> record) {
        OrderEvent event;
        try {
            event = OrderEvent.decode(record.value());
        } catch (RuntimeException e) {
            return Outcome.rejected("not an order event: " + e.getMessage(), e);
        }
        if (!event.key().equals(key)) {
            return Outcome.rejected("the idem-key header does not match the event");
        }
        Outcome outcome = deliver(event);
        if (outcome.action() == Outcome.Action.RETRY) {
            logRetry(event, outcome);
        }
        if (outcome.action() != Outcome.Action.RETRY && faults.of(key) == Fault.CRASH && crashedOnce.add(key)) {
            throw new InjectedCrash();
        }
        return outcome;
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
            second.get(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
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
                deliveries.incrementAndGet();
                Outcome outcome = count(strategy.handle(Delivery.plain(event)));
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

    /** The injected crash: thrown after the database commit, before the offset commit; stops the runner. */
    static final class InjectedCrash extends Error {
        private static final long serialVersionUID = 1L;

        InjectedCrash() {
            super("injected crash after the database commit, before the offset commit", null, false, false);
        }
    }
}
