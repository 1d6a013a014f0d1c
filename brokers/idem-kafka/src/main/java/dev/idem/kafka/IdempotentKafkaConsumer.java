package dev.idem.kafka;

import dev.idem.ConfigurationException;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jspecify.annotations.Nullable;

/**
 * A Kafka consumer that owns the poll loop for a guarded handler and commits offsets only for records whose
 * handling is final.
 *
 * <pre>{@code
 * IdempotentKafkaConsumer<String, String> consumer = IdempotentKafkaConsumer.builder(consumerProperties)
 *         .topics("payments")
 *         .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
 *         .handler((key, record) -> guard.run(key, () -> debit(record.value())))
 *         .build();
 * consumer.start();
 * }</pre>
 *
 * <p>What it does with each record, by the handler's {@link Outcome}:
 *
 * <ul>
 *   <li>{@code PROCESSED}, {@code DUPLICATE}: final. A partition's offset is committed (explicitly, {@code
 *       commitSync(offsets)}) only up to the first record that is not final.
 *   <li>{@code IN_PROGRESS}, {@code OUT_OF_ORDER}, {@code FAILED}: the partition is paused and the consumer seeks
 *       back to the record; the poll loop goes on (so {@code max.poll.interval.ms} is never exceeded) and resumes the
 *       partition after the {@link RetryPolicy} backoff (or sooner: the outcome's {@code retryAfter}). Later records of that
 *       partition wait: order within a partition is kept. After {@code maxAttempts} the record is dead-lettered.
 *   <li>{@code REJECTED}, a missing or unreadable key, a value or key that cannot be deserialized: dead-lettered at
 *       once. A dead-lettered record is final once the dead-letter topic acknowledged it.
 * </ul>
 *
 * <p>Dead-letter records keep the key, value and headers and add {@value #DLT_REASON}, {@value #DLT_OUTCOME},
 * {@value #DLT_ATTEMPTS}, {@value #DLT_TOPIC}, {@value #DLT_PARTITION} and {@value #DLT_OFFSET} (UTF-8 text). The
 * dead-letter topic (default {@code <topic>-dlt}) must exist.
 *
 * <p>Partitions are handled in parallel by {@code workers} threads, one record of a partition at a time. On
 * revocation, the final offsets of the revoked partitions are committed; a record still being handled when its
 * partition is revoked is never committed by this consumer (its new owner handles it again, and the guard answers
 * {@code IN_PROGRESS} or {@code DUPLICATE}). {@link #close()} lets each worker finish its current record, commits,
 * and closes the Kafka clients. An {@link Error} thrown by the handler stops the consumer at once without committing
 * (like a crash): see {@link #failure()}.
 *
 * <p>Thread-safe; the built object's settings are immutable. Start it once.
 *
 * @param <K> record key type
 * @param <V> record value type
 */
public final class IdempotentKafkaConsumer<K, V> implements AutoCloseable {
    public static final String DLT_REASON = "idem-dlt-reason";
    public static final String DLT_OUTCOME = "idem-dlt-outcome";
    public static final String DLT_ATTEMPTS = "idem-dlt-attempts";
    public static final String DLT_TOPIC = "idem-dlt-topic";
    public static final String DLT_PARTITION = "idem-dlt-partition";
    public static final String DLT_OFFSET = "idem-dlt-offset";

    private static final System.Logger LOG = System.getLogger(IdempotentKafkaConsumer.class.getName());

    private final Map<String, Object> consumerProperties;
    private final List<String> topics;
    private final Deserializer<K> keyDeserializer;
    private final Deserializer<V> valueDeserializer;
    private final KeyExtractor<K, V> keyExtractor;
    private final RecordHandler<K, V> handler;
    private final RetryPolicy retryPolicy;
    private final Function<String, String> deadLetterTopic;
    private final @Nullable Producer<byte[], byte[]> givenDeadLetterProducer;
    private final Duration deadLetterTimeout;
    private final int workers;
    private final Duration pollTimeout;
    private final Duration shutdownTimeout;
    private final Clock clock;
    private final String name;

    private final Object lifecycle = new Object();
    private final CountDownLatch stopped = new CountDownLatch(1);
    private final ConcurrentLinkedQueue<BatchResult> completions = new ConcurrentLinkedQueue<>();
    private final Map<TopicPartition, PartitionState> partitions = new HashMap<>();
    private volatile boolean stopping;
    private volatile Set<TopicPartition> assignment = Set.of();
    private volatile @Nullable Throwable failure;
    /** A handler threw an {@link Error}: like a crash, nothing more is committed. Poll thread only. */
    private boolean crashed;

    private @Nullable Thread pollThread;
    private @Nullable KafkaConsumer<byte[], byte[]> consumer;
    private @Nullable Producer<byte[], byte[]> deadLetterProducer;
    private @Nullable ExecutorService executor;

    private IdempotentKafkaConsumer(Builder<K, V> b) {
        this.consumerProperties = Map.copyOf(b.consumerProperties);
        this.topics = List.copyOf(b.topics);
        this.keyDeserializer = b.keyDeserializer;
        this.valueDeserializer = b.valueDeserializer;
        this.keyExtractor = Objects.requireNonNull(b.keyExtractor);
        this.handler = Objects.requireNonNull(b.handler);
        this.retryPolicy = b.retryPolicy;
        this.deadLetterTopic = b.deadLetterTopic;
        this.givenDeadLetterProducer = b.deadLetterProducer;
        this.deadLetterTimeout = b.deadLetterTimeout;
        this.workers = b.workers;
        this.pollTimeout = b.pollTimeout;
        this.shutdownTimeout = b.shutdownTimeout;
        this.clock = b.clock;
        this.name = String.valueOf(consumerProperties.get(ConsumerConfig.GROUP_ID_CONFIG));
    }

    /**
     * A builder on the given consumer settings ({@code bootstrap.servers} and {@code group.id} required). Keys and
     * values are deserialized by the runner as strings unless {@link Builder#keyDeserializer} / {@link
     * Builder#valueDeserializer} say otherwise; do not set {@code key.deserializer}, {@code value.deserializer} or
     * {@code enable.auto.commit}.
     */
    public static Builder<String, String> builder(Map<String, ?> consumerProperties) {
        return new Builder<>(consumerProperties);
    }

    /** Subscribes and starts the poll loop on its own thread. */
    public IdempotentKafkaConsumer<K, V> start() {
        synchronized (lifecycle) {
            if (pollThread != null) {
                throw new IllegalStateException("consumer " + name + " was already started");
            }
            Map<String, Object> props = new HashMap<>(consumerProperties);
            props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            deadLetterProducer =
                    givenDeadLetterProducer != null ? givenDeadLetterProducer : newDeadLetterProducer(props);
            AtomicInteger n = new AtomicInteger();
            executor = Executors.newFixedThreadPool(workers, r -> {
                Thread t = new Thread(r, "idem-kafka-" + name + "-worker-" + n.incrementAndGet());
                t.setDaemon(true);
                return t;
            });
            Thread thread = new Thread(this::pollLoop, "idem-kafka-" + name + "-poll");
            thread.setDaemon(true);
            pollThread = thread;
            thread.start();
            return this;
        }
    }

    /** The partitions assigned to this consumer now (empty before the first assignment and after close). */
    public Set<TopicPartition> assignment() {
        return assignment;
    }

    /** True from {@link #start()} until the poll loop ended (after {@link #close()} or a handler {@link Error}). */
    public boolean isRunning() {
        return pollThread != null && stopped.getCount() > 0;
    }

    /** The {@link Error} a handler threw, which stopped this consumer without committing, or the loop's own crash. */
    public Optional<Throwable> failure() {
        return Optional.ofNullable(failure);
    }

    /**
     * Stops: each worker finishes the record in hand, final offsets are committed, the Kafka clients are closed.
     * Waits up to the shutdown timeout for handlers, then interrupts them (their records are not committed).
     */
    @Override
    public void close() {
        stopping = true;
        Thread thread;
        synchronized (lifecycle) {
            thread = pollThread;
        }
        if (thread == null || Thread.currentThread() == thread) {
            return;
        }
        try {
            stopped.await(shutdownTimeout.toMillis() + 30_000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ---- poll thread ----

    private void pollLoop() {
        KafkaConsumer<byte[], byte[]> kafka = Objects.requireNonNull(consumer);
        try {
            kafka.subscribe(topics, new Rebalance(kafka));
            while (!stopping && !drainCompletions(kafka)) {
                resumeDueRetries(kafka);
                commitFinal(kafka, partitions.values());
                dispatch(kafka, kafka.poll(pollTimeout));
            }
            if (!crashed && !finishInFlight(kafka)) {
                commitFinal(kafka, partitions.values());
            }
        } catch (RuntimeException | Error e) {
            crashed = true;
            failure = e;
            LOG.log(System.Logger.Level.ERROR, "consumer " + name + " stopped on an unexpected error", e);
        } finally {
            stopping = true;
            Objects.requireNonNull(executor).shutdownNow();
            closeQuietly(kafka);
            if (givenDeadLetterProducer == null) {
                Objects.requireNonNull(deadLetterProducer).close(Duration.ofSeconds(5));
            }
            assignment = Set.of();
            stopped.countDown();
        }
    }

    private boolean finishInFlight(KafkaConsumer<byte[], byte[]> kafka) {
        kafka.pause(kafka.assignment());
        long deadline = System.nanoTime() + shutdownTimeout.toNanos();
        while (partitions.values().stream().anyMatch(p -> p.busy) && System.nanoTime() < deadline) {
            if (drainCompletions(kafka)) {
                return true;
            }
            kafka.poll(pollTimeout);
        }
        return drainCompletions(kafka);
    }

    private void closeQuietly(KafkaConsumer<byte[], byte[]> kafka) {
        try {
            kafka.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ofSeconds(10)));
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "consumer " + name + ": close failed: " + e.getMessage());
        }
    }

    /** Applies the workers' results; returns true when a handler threw an {@link Error}. */
    private boolean drainCompletions(KafkaConsumer<byte[], byte[]> kafka) {
        if (crashed) {
            return true;
        }
        BatchResult result;
        while ((result = completions.poll()) != null) {
            PartitionState state = result.state;
            if (result.fatal != null) {
                crashed = true;
                failure = result.fatal;
                LOG.log(
                        System.Logger.Level.ERROR,
                        "consumer " + name + " stopped: the handler threw an Error on " + state.tp
                                + "; nothing more is committed",
                        result.fatal);
                return true;
            }
            if (partitions.get(state.tp) != state) {
                continue; // revoked meanwhile: its new owner handles it
            }
            state.busy = false;
            if (result.nextOffset >= 0) {
                state.committable = result.nextOffset;
            }
            if (result.retryOffset >= 0) {
                kafka.seek(state.tp, result.retryOffset);
                state.headOffset = result.retryOffset;
                state.headAttempts = result.attempts;
                state.retryAt = clock.instant().plus(result.retryDelay);
            } else if (!stopping) {
                kafka.resume(List.of(state.tp));
            }
        }
        return false;
    }

    private void resumeDueRetries(KafkaConsumer<byte[], byte[]> kafka) {
        Instant now = clock.instant();
        for (PartitionState state : partitions.values()) {
            if (state.retryAt != null && !now.isBefore(state.retryAt)) {
                state.retryAt = null;
                kafka.resume(List.of(state.tp));
            }
        }
    }

    private void commitFinal(KafkaConsumer<byte[], byte[]> kafka, Collection<PartitionState> states) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (PartitionState state : states) {
            if (state.committable > state.committed) {
                offsets.put(state.tp, new OffsetAndMetadata(state.committable));
            }
        }
        if (offsets.isEmpty()) {
            return;
        }
        try {
            kafka.commitSync(offsets);
            for (PartitionState state : states) {
                OffsetAndMetadata done = offsets.get(state.tp);
                if (done != null) {
                    state.committed = done.offset();
                }
            }
        } catch (KafkaException e) {
            // CommitFailedException, RebalanceInProgressException...: the partitions move; their new owner re-reads
            // from the last committed offset and the guard answers DUPLICATE for what was done here.
            LOG.log(System.Logger.Level.WARNING, "consumer " + name + ": commit of " + offsets + " failed: " + e);
        }
    }

    private void dispatch(KafkaConsumer<byte[], byte[]> kafka, ConsumerRecords<byte[], byte[]> records) {
        for (TopicPartition tp : records.partitions()) {
            List<ConsumerRecord<byte[], byte[]>> batch = records.records(tp);
            PartitionState state = partitions.get(tp);
            if (state == null || state.busy || state.retryAt != null) {
                // Not ours any more, or fetched just before a pause: read these again later.
                if (state != null) {
                    kafka.seek(tp, batch.get(0).offset());
                }
                continue;
            }
            state.busy = true;
            kafka.pause(List.of(tp));
            long headOffset = state.headOffset;
            int headAttempts = state.headAttempts;
            Objects.requireNonNull(executor)
                    .execute(() -> completions.add(handleBatch(state, batch, headOffset, headAttempts)));
        }
    }

    private final class Rebalance implements ConsumerRebalanceListener {
        private final KafkaConsumer<byte[], byte[]> kafka;

        Rebalance(KafkaConsumer<byte[], byte[]> kafka) {
            this.kafka = kafka;
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
            boolean crash = drainCompletions(kafka);
            List<PartitionState> states = new ArrayList<>();
            for (TopicPartition tp : revoked) {
                PartitionState state = partitions.remove(tp);
                if (state != null) {
                    state.revoked = true;
                    states.add(state);
                }
            }
            if (!crash) {
                commitFinal(kafka, states);
            }
            assignment = Set.copyOf(partitions.keySet());
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> lost) {
            for (TopicPartition tp : lost) {
                PartitionState state = partitions.remove(tp);
                if (state != null) {
                    state.revoked = true;
                }
            }
            assignment = Set.copyOf(partitions.keySet());
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
            for (TopicPartition tp : assigned) {
                partitions.computeIfAbsent(tp, PartitionState::new);
            }
            assignment = Set.copyOf(partitions.keySet());
        }
    }

    // ---- worker threads ----

    private BatchResult handleBatch(
            PartitionState state, List<ConsumerRecord<byte[], byte[]>> batch, long headOffset, int headAttempts) {
        long next = -1;
        for (ConsumerRecord<byte[], byte[]> record : batch) {
            if (state.revoked || stopping) {
                break;
            }
            int attempt = (record.offset() == headOffset ? headAttempts : 0) + 1;
            Decision decision;
            try {
                decision = handleRecord(record, attempt);
            } catch (Error e) {
                return BatchResult.fatal(state, e);
            }
            if (decision.retryDelay != null) {
                return new BatchResult(state, next, record.offset(), attempt, decision.retryDelay, null);
            }
            next = record.offset() + 1;
        }
        return new BatchResult(state, next, -1, 0, Duration.ZERO, null);
    }

    private Decision handleRecord(ConsumerRecord<byte[], byte[]> raw, int attempt) {
        ConsumerRecord<K, V> record;
        try {
            K key = raw.key() == null ? null : keyDeserializer.deserialize(raw.topic(), raw.headers(), raw.key());
            V value =
                    raw.value() == null ? null : valueDeserializer.deserialize(raw.topic(), raw.headers(), raw.value());
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
        } catch (RuntimeException e) {
            return deadLetter(raw, Outcome.rejected("record could not be deserialized: " + describe(e), e), attempt);
        }
        String key;
        try {
            key = keyExtractor.extract(record);
        } catch (Exception e) {
            return deadLetter(
                    raw,
                    Outcome.rejected("idempotency key unreadable from " + keyExtractor.describe() + ": " + describe(e)),
                    attempt);
        }
        if (key == null || key.isBlank()) {
            return deadLetter(
                    raw,
                    Outcome.rejected("no idempotency key: " + keyExtractor.describe()
                            + " is missing or blank; the producer must stamp a key before the first send"),
                    attempt);
        }
        Outcome outcome = runHandler(key, record);
        LOG.log(
                System.Logger.Level.DEBUG,
                () -> name + " " + raw.topic() + "-" + raw.partition() + "@" + raw.offset() + " attempt " + attempt
                        + ": " + outcome);
        return switch (outcome.action()) {
            case ACK -> Decision.FINAL;
            case DEAD_LETTER -> deadLetter(raw, outcome, attempt);
            case RETRY -> {
                if (retryPolicy.exhausted(attempt)) {
                    yield deadLetter(
                            raw,
                            outcome.withReason("gave up after " + attempt + " attempts; last: " + outcome.reason()),
                            attempt);
                }
                yield Decision.retry(retryDelay(outcome, attempt));
            }
        };
    }

    /**
     * The policy's backoff, but never later than the outcome's own {@code retryAfter} (for {@code IN_PROGRESS}: when
     * the holder's lease ends); the holder usually finishes well before that.
     */
    private Duration retryDelay(Outcome outcome, int attempt) {
        Duration backoff = retryPolicy.delayAfter(attempt);
        return outcome.retryAfter()
                .filter(after -> after.compareTo(backoff) < 0)
                .orElse(backoff);
    }

    private Outcome runHandler(String key, ConsumerRecord<K, V> record) {
        try {
            return Objects.requireNonNull(handler.handle(key, record), "a handler must return an Outcome, not null");
        } catch (Exception e) {
            return Outcome.ofException(e);
        }
    }

    private Decision deadLetter(ConsumerRecord<byte[], byte[]> raw, Outcome outcome, int attempt) {
        String topic = deadLetterTopic.apply(raw.topic());
        Headers headers = new RecordHeaders(raw.headers().toArray());
        headers.add(DLT_REASON, utf8(outcome.reason()));
        headers.add(DLT_OUTCOME, utf8(outcome.type().name()));
        headers.add(DLT_ATTEMPTS, utf8(Integer.toString(attempt)));
        headers.add(DLT_TOPIC, utf8(raw.topic()));
        headers.add(DLT_PARTITION, utf8(Integer.toString(raw.partition())));
        headers.add(DLT_OFFSET, utf8(Long.toString(raw.offset())));
        try {
            Objects.requireNonNull(deadLetterProducer)
                    .send(new ProducerRecord<>(topic, null, raw.key(), raw.value(), headers))
                    .get(deadLetterTimeout.toMillis(), TimeUnit.MILLISECONDS);
            LOG.log(
                    System.Logger.Level.WARNING,
                    "{0} {1}-{2}@{3} dead-lettered to {4} ({5}): {6}",
                    name,
                    raw.topic(),
                    raw.partition(),
                    raw.offset(),
                    topic,
                    outcome.type(),
                    outcome.reason());
            return Decision.FINAL;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Decision.retry(retryPolicy.delayAfter(attempt));
        } catch (Exception e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "{0} {1}-{2}@{3}: dead-letter topic {4} unavailable ({5}); retrying later",
                    name,
                    raw.topic(),
                    raw.partition(),
                    raw.offset(),
                    topic,
                    e.toString());
            return Decision.retry(retryPolicy.delayAfter(attempt));
        }
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String describe(Throwable e) {
        return e.getClass().getName() + ": " + e.getMessage();
    }

    private static Producer<byte[], byte[]> newDeadLetterProducer(Map<String, Object> consumerProps) {
        Map<String, Object> props = new HashMap<>(KafkaProducers.recommendedSettings());
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, consumerProps.get(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG));
        for (String shared : List.of("security.protocol", "client.dns.lookup")) {
            if (consumerProps.containsKey(shared)) {
                props.put(shared, consumerProps.get(shared));
            }
        }
        return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** Per-partition progress. Fields other than {@code revoked} belong to the poll thread. */
    private static final class PartitionState {
        final TopicPartition tp;
        boolean busy;
        long committable = -1;
        long committed = -1;
        long headOffset = -1;
        int headAttempts;

        @Nullable
        Instant retryAt;

        volatile boolean revoked;

        PartitionState(TopicPartition tp) {
            this.tp = tp;
        }
    }

    private record Decision(@Nullable Duration retryDelay) {
        static final Decision FINAL = new Decision(null);

        static Decision retry(Duration delay) {
            return new Decision(delay);
        }
    }

    private record BatchResult(
            PartitionState state,
            long nextOffset,
            long retryOffset,
            int attempts,
            Duration retryDelay,
            @Nullable Throwable fatal) {
        static BatchResult fatal(PartitionState state, Throwable error) {
            return new BatchResult(state, -1, -1, 0, Duration.ZERO, error);
        }
    }

    /**
     * Builds an {@link IdempotentKafkaConsumer}. Each setter validates its value at once; {@link #build()} checks that
     * topics, a key extractor and a handler were given.
     */
    public static final class Builder<K, V> {
        private final Map<String, Object> consumerProperties;
        private List<String> topics = List.of();
        private Deserializer<K> keyDeserializer;
        private Deserializer<V> valueDeserializer;
        private @Nullable KeyExtractor<K, V> keyExtractor;
        private @Nullable RecordHandler<K, V> handler;
        private RetryPolicy retryPolicy = RetryPolicy.defaults();
        private Function<String, String> deadLetterTopic = topic -> topic + "-dlt";
        private @Nullable Producer<byte[], byte[]> deadLetterProducer;
        private Duration deadLetterTimeout = Duration.ofSeconds(30);
        private int workers = 1;
        private Duration pollTimeout = Duration.ofMillis(100);
        private Duration shutdownTimeout = Duration.ofSeconds(30);
        private Clock clock = Clock.systemUTC();

        @SuppressWarnings("unchecked")
        private Builder(Map<String, ?> consumerProperties) {
            Objects.requireNonNull(consumerProperties, "consumerProperties");
            this.consumerProperties = new HashMap<>(consumerProperties);
            require(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "the broker addresses");
            require(ConsumerConfig.GROUP_ID_CONFIG, "the consumer group: offsets are committed for it");
            for (String forbidden : List.of(
                    ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG)) {
                if (consumerProperties.containsKey(forbidden)) {
                    throw new ConfigurationException("do not set " + forbidden + ": the consumer reads bytes and"
                            + " deserializes each record itself, so that a bad record is dead-lettered instead of"
                            + " stopping the loop; use .keyDeserializer(...) / .valueDeserializer(...)");
                }
            }
            Object autoCommit = consumerProperties.get(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG);
            if (autoCommit != null && Boolean.parseBoolean(autoCommit.toString())) {
                throw new ConfigurationException("enable.auto.commit=true would commit records that are not final:"
                        + " remove it, the consumer commits offsets itself");
            }
            this.keyDeserializer = (Deserializer<K>) new StringDeserializer();
            this.valueDeserializer = (Deserializer<V>) new StringDeserializer();
        }

        private void require(String property, String what) {
            Object value = consumerProperties.get(property);
            if (value == null || value.toString().isBlank()) {
                throw new ConfigurationException("consumer property " + property + " is required (" + what + ")");
            }
        }

        /** Required: the topics to subscribe to. */
        public Builder<K, V> topics(String... topics) {
            if (topics.length == 0) {
                throw new ConfigurationException("give at least one topic");
            }
            for (String topic : topics) {
                if (topic == null || topic.isBlank()) {
                    throw new ConfigurationException("a topic name must not be blank");
                }
            }
            this.topics = List.of(topics);
            return this;
        }

        /** How record keys are deserialized (default UTF-8 strings). A failure dead-letters the record. */
        @SuppressWarnings("unchecked")
        public <K2> Builder<K2, V> keyDeserializer(Deserializer<K2> deserializer) {
            Builder<K2, V> self = (Builder<K2, V>) this;
            self.keyDeserializer = Objects.requireNonNull(deserializer, "deserializer");
            self.keyExtractor = null;
            self.handler = null;
            return self;
        }

        /** How record values are deserialized (default UTF-8 strings). A failure dead-letters the record. */
        @SuppressWarnings("unchecked")
        public <V2> Builder<K, V2> valueDeserializer(Deserializer<V2> deserializer) {
            Builder<K, V2> self = (Builder<K, V2>) this;
            self.valueDeserializer = Objects.requireNonNull(deserializer, "deserializer");
            self.keyExtractor = null;
            self.handler = null;
            return self;
        }

        /** Required: where the idempotency key comes from. Set the deserializers first. */
        public Builder<K, V> keyFrom(KeyExtractor<K, V> extractor) {
            this.keyExtractor = Objects.requireNonNull(extractor, "extractor");
            return this;
        }

        /** Required: the guarded handler. Set the deserializers first. */
        public Builder<K, V> handler(RecordHandler<K, V> handler) {
            this.handler = Objects.requireNonNull(handler, "handler");
            return this;
        }

        /** Backoff and bound for retried records. Default {@link RetryPolicy#defaults()} (10 attempts). */
        public Builder<K, V> retryPolicy(RetryPolicy retryPolicy) {
            this.retryPolicy = Objects.requireNonNull(retryPolicy, "retryPolicy");
            return this;
        }

        /** The dead-letter topic of each source topic. Default {@code <topic>-dlt}. The topic must exist. */
        public Builder<K, V> deadLetterTopic(Function<String, String> topicOf) {
            this.deadLetterTopic = Objects.requireNonNull(topicOf, "topicOf");
            return this;
        }

        /**
         * The producer for dead letters (not closed by the consumer). Default: one built from {@code
         * bootstrap.servers} with {@link KafkaProducers#recommendedSettings()}, closed with the consumer.
         */
        public Builder<K, V> deadLetterProducer(Producer<byte[], byte[]> producer) {
            this.deadLetterProducer = Objects.requireNonNull(producer, "producer");
            return this;
        }

        /** How long to wait for the dead-letter topic's acknowledgement before retrying. Default 30 s. */
        public Builder<K, V> deadLetterTimeout(Duration timeout) {
            this.deadLetterTimeout = positive("deadLetterTimeout", timeout);
            return this;
        }

        /** Partitions handled in parallel (each by one worker at a time, in order). Default 1. */
        public Builder<K, V> workers(int workers) {
            if (workers < 1 || workers > 1024) {
                throw new ConfigurationException("workers must be between 1 and 1024, got " + workers);
            }
            this.workers = workers;
            return this;
        }

        /** The longest a single {@code poll} blocks; bounds how soon results are committed. Default 100 ms. */
        public Builder<K, V> pollTimeout(Duration timeout) {
            this.pollTimeout = positive("pollTimeout", timeout);
            return this;
        }

        /** How long {@link #close()} waits for handlers to finish their record. Default 30 s. */
        public Builder<K, V> shutdownTimeout(Duration timeout) {
            this.shutdownTimeout = positive("shutdownTimeout", timeout);
            return this;
        }

        /** The clock that times retry backoffs. Default: system UTC. */
        public Builder<K, V> clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        public IdempotentKafkaConsumer<K, V> build() {
            if (topics.isEmpty()) {
                throw new ConfigurationException("call .topics(...) on the builder: the consumer needs a topic");
            }
            if (keyExtractor == null) {
                throw new ConfigurationException("call .keyFrom(KeyExtractor.header(\"" + KafkaProducers.KEY_HEADER
                        + "\")) (or recordKey() / value(fn)) after the deserializers: no record is handled without a"
                        + " key");
            }
            if (handler == null) {
                throw new ConfigurationException(
                        "call .handler((key, record) -> guard.run(key, ...)) after the deserializers");
            }
            return new IdempotentKafkaConsumer<>(this);
        }

        private static Duration positive(String name, Duration value) {
            if (value == null || value.isNegative() || value.isZero()) {
                throw new ConfigurationException(name + " must be positive, got " + value);
            }
            return value;
        }
    }
}
