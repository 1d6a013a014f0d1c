package dev.idem.kafka;

import dev.idem.ConfigurationException;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jspecify.annotations.Nullable;

/**
 * A Kafka consumer that owns the poll loop for a guarded handler and commits, record by record, only what is final.
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
 * <p>What it does with each record, by the handler's {@link Outcome} or exception, as {@link
 * dev.idem.spi.DeliveryDecision} decides for every adapter (an exception whose chain shows an unreachable store or
 * database is {@code IN_PROGRESS}):
 *
 * <ul>
 *   <li>{@code PROCESSED}, {@code DUPLICATE}: final. Each partition's offset is committed up to the first record that
 *       is not final: asynchronously while polling, synchronously when a partition is revoked and on {@link #close()}.
 *   <li>{@code FAILED}, {@code OUT_OF_ORDER}: the handler's own failures. The record is retried after the {@link
 *       RetryPolicy} backoff, later records of its partition (or of its key, with {@link Ordering#KEY}) waiting; after
 *       {@code maxAttempts} it is dead-lettered.
 *   <li>{@code IN_PROGRESS}: the key is held elsewhere, or the store is down and fails closed. The record waits, the
 *       backoff growing to its cap; it never counts toward {@code maxAttempts} and is never dead-lettered for it.
 *   <li>{@code REJECTED}, a missing or unreadable key, a record that cannot be deserialized: dead-lettered at once. A
 *       dead-lettered record is final once the dead-letter topic acknowledged it.
 * </ul>
 *
 * <p>Dead-letter records keep the key, value and headers and add {@value #DLT_REASON}, {@value #DLT_OUTCOME},
 * {@value #DLT_ATTEMPTS}, {@value #DLT_TOPIC}, {@value #DLT_PARTITION} and {@value #DLT_OFFSET} (UTF-8 text). The
 * dead-letter topic of each topic (default {@code <topic>-dlt}) is checked at {@link #start()} and must exist, unless
 * {@link Builder#createDeadLetterTopics(boolean)} lets the runner create it.
 *
 * <p>Records are handled by {@code workers} threads: a partition's records one at a time, in order (or per key, with
 * {@link Ordering#KEY}), or in batches with a {@link BatchHandler}. A record still being handled when its partition is
 * revoked is not committed by this consumer (its new owner handles it again, and the guard answers {@code
 * IN_PROGRESS} or {@code DUPLICATE}); every record finished before is. {@link #close()} lets each worker finish its
 * record, commits, and closes the Kafka clients. An {@link Error} thrown by a handler stops the consumer at once
 * without committing (like a crash). A {@link ConfigurationException} thrown by a handler (or causing its outcome), a
 * deserializer or the key extractor, e.g. a store whose table is missing, stops it too: it is the setup's fault, not
 * the record's, so the record is neither retried nor dead-lettered. That and any other failure of the runner itself
 * (a failing poll, a broken batch handler) stop it after committing what is final. All are reported by {@link
 * #failure()} and {@link #health()}.
 *
 * <p>Consumer settings the runner sets: {@code enable.auto.commit=false}; {@code isolation.level=read_committed}
 * unless given. Under {@code auto.offset.reset=latest} (Kafka's default) the position of a newly assigned partition
 * without a committed offset is committed at once, so a record that was retrying when the partition moved is not
 * skipped by the next owner.
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

    private final Settings<K, V> settings;
    private final Object lifecycle = new Object();
    private volatile @Nullable PollLoop<K, V> loop;

    private IdempotentKafkaConsumer(Settings<K, V> settings) {
        this.settings = settings;
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

    /**
     * Checks the dead-letter topics, subscribes and starts the poll loop on its own thread. Nothing is left open when
     * it throws.
     *
     * @throws ConfigurationException when a dead-letter topic is missing (and may not be created) or cannot be checked
     */
    public IdempotentKafkaConsumer<K, V> start() {
        synchronized (lifecycle) {
            if (loop != null) {
                throw new IllegalStateException("consumer " + settings.name() + " was already started");
            }
            DeadLetterPublisher.checkTopics(
                    settings.consumerConfig(),
                    settings.topics(),
                    settings.deadLetterTopic(),
                    settings.createDeadLetterTopics());
            Producer<byte[], byte[]> given = settings.deadLetterProducer();
            DeadLetterPublisher deadLetters = given != null
                    ? DeadLetterPublisher.using(given, settings.deadLetterTopic(), settings.deadLetterTimeout())
                    : DeadLetterPublisher.owning(
                            settings.consumerConfig(), settings.deadLetterTopic(), settings.deadLetterTimeout());
            Consumer<byte[], byte[]> consumer;
            try {
                consumer = Objects.requireNonNull(
                        settings.consumerFactory().apply(settings.consumerConfig()),
                        "the consumer factory returned null");
            } catch (RuntimeException e) {
                deadLetters.close();
                throw e;
            }
            AtomicInteger n = new AtomicInteger();
            ExecutorService executor = Executors.newFixedThreadPool(settings.workers(), r -> {
                Thread t = new Thread(r, "idem-kafka-" + settings.name() + "-worker-" + n.incrementAndGet());
                t.setDaemon(true);
                return t;
            });
            PollLoop<K, V> started = new PollLoop<>(
                    settings, consumer, executor, deadLetters, new Events(settings.name(), settings.listener()));
            Thread thread = new Thread(started, "idem-kafka-" + settings.name() + "-poll");
            thread.setDaemon(true);
            loop = started;
            thread.start();
            return this;
        }
    }

    /** The partitions assigned to this consumer now (empty before the first assignment and after close). */
    public Set<TopicPartition> assignment() {
        PollLoop<K, V> l = loop;
        return l == null ? Set.of() : l.assignment();
    }

    /** True from {@link #start()} until the poll loop ended (after {@link #close()} or a failure). */
    public boolean isRunning() {
        PollLoop<K, V> l = loop;
        return l != null && !l.isStopped();
    }

    /**
     * What stopped this consumer: a handler's {@link Error} or {@link ConfigurationException}, or a failure of the
     * runner itself (never a handler's other exceptions, which are outcomes).
     */
    public Optional<Throwable> failure() {
        PollLoop<K, V> l = loop;
        return l == null ? Optional.empty() : Optional.ofNullable(l.failure());
    }

    /** Whether records still move: running, stalled on a handler past its timeout, failed or stopped. */
    public Health health() {
        PollLoop<K, V> l = loop;
        if (l == null) {
            return new Health(Health.State.NOT_STARTED, List.of("start() was not called"));
        }
        Throwable failure = l.failure();
        if (failure != null) {
            return new Health(Health.State.FAILED, List.of(failure.toString()));
        }
        if (l.isStopped()) {
            return new Health(Health.State.STOPPED, List.of());
        }
        List<String> overdue = l.overdueHandlers();
        return new Health(overdue.isEmpty() ? Health.State.RUNNING : Health.State.STALLED, overdue);
    }

    /**
     * Waits until the poll loop has ended (after {@link #close()} or a failure).
     *
     * @return false when it still runs after {@code timeout}
     */
    public boolean awaitTermination(Duration timeout) throws InterruptedException {
        PollLoop<K, V> l = loop;
        return l == null || l.awaitStopped(timeout);
    }

    /**
     * Stops: each worker finishes the record in hand, final offsets are committed, the Kafka clients are closed.
     * Waits up to the shutdown timeout for handlers, then interrupts them (their records are not committed).
     */
    @Override
    public void close() {
        PollLoop<K, V> l = loop;
        if (l == null) {
            return;
        }
        l.stop();
        try {
            l.awaitStopped(settings.shutdownTimeout().plusSeconds(30));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Builds an {@link IdempotentKafkaConsumer}. Each setter validates its value at once; {@link #build()} checks that
     * topics, a key extractor and a handler were given.
     */
    public static final class Builder<K, V> {
        private final Map<String, Object> consumerProperties;
        private Function<Map<String, Object>, Consumer<byte[], byte[]>> consumerFactory =
                props -> new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        private List<String> topics = List.of();
        private Deserializer<K> keyDeserializer;
        private Deserializer<V> valueDeserializer;
        private @Nullable KeyExtractor<K, V> keyExtractor;
        private @Nullable RecordHandler<K, V> handler;
        private @Nullable BatchHandler<K, V> batchHandler;
        private int maxBatchSize = 1;
        private Ordering ordering = Ordering.PARTITION;
        private RetryPolicy retryPolicy = RetryPolicy.defaults();
        private Function<String, String> deadLetterTopic = topic -> topic + "-dlt";
        private @Nullable Producer<byte[], byte[]> deadLetterProducer;
        private Duration deadLetterTimeout = Duration.ofSeconds(30);
        private boolean createDeadLetterTopics;
        private int workers = 1;
        private Duration pollTimeout = Duration.ofMillis(100);
        private Duration shutdownTimeout = Duration.ofSeconds(30);
        private @Nullable Duration handlerTimeout;
        private LongSupplier nanoTime = System::nanoTime;
        private IdempotencyListener listener = IdempotencyListener.NONE;

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
            this.consumerProperties.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            this.consumerProperties.putIfAbsent(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
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

        /**
         * How the Kafka consumer is made from the final settings (byte-array deserializers; the runner deserializes
         * each record itself). Default: a {@link KafkaConsumer}. For a framework that manages clients, or a test.
         */
        public Builder<K, V> consumerFactory(Function<Map<String, Object>, Consumer<byte[], byte[]>> factory) {
            this.consumerFactory = Objects.requireNonNull(factory, "factory");
            return this;
        }

        /** How record keys are deserialized (default UTF-8 strings). A failure dead-letters the record. */
        @SuppressWarnings("unchecked")
        public <K2> Builder<K2, V> keyDeserializer(Deserializer<K2> deserializer) {
            Builder<K2, V> self = (Builder<K2, V>) this;
            self.keyDeserializer = Objects.requireNonNull(deserializer, "deserializer");
            self.keyExtractor = null;
            self.handler = null;
            self.batchHandler = null;
            return self;
        }

        /** How record values are deserialized (default UTF-8 strings). A failure dead-letters the record. */
        @SuppressWarnings("unchecked")
        public <V2> Builder<K, V2> valueDeserializer(Deserializer<V2> deserializer) {
            Builder<K, V2> self = (Builder<K, V2>) this;
            self.valueDeserializer = Objects.requireNonNull(deserializer, "deserializer");
            self.keyExtractor = null;
            self.handler = null;
            self.batchHandler = null;
            return self;
        }

        /** Required: where the idempotency key comes from. Set the deserializers first. */
        public Builder<K, V> keyFrom(KeyExtractor<K, V> extractor) {
            this.keyExtractor = Objects.requireNonNull(extractor, "extractor");
            return this;
        }

        /** The guarded handler of one record (this or {@link #batchHandler}). Set the deserializers first. */
        public Builder<K, V> handler(RecordHandler<K, V> handler) {
            this.handler = Objects.requireNonNull(handler, "handler");
            this.batchHandler = null;
            return this;
        }

        /**
         * The guarded handler of up to {@code maxBatchSize} records of one partition at a time (this or {@link
         * #handler}), e.g. one database transaction per batch. Partition order only ({@link Ordering#PARTITION}).
         */
        public Builder<K, V> batchHandler(BatchHandler<K, V> handler, int maxBatchSize) {
            if (maxBatchSize < 1 || maxBatchSize > 10_000) {
                throw new ConfigurationException("maxBatchSize must be between 1 and 10000, got " + maxBatchSize);
            }
            this.batchHandler = Objects.requireNonNull(handler, "handler");
            this.maxBatchSize = maxBatchSize;
            this.handler = null;
            return this;
        }

        /** What is kept in order within a partition. Default {@link Ordering#PARTITION}. */
        public Builder<K, V> ordering(Ordering ordering) {
            this.ordering = Objects.requireNonNull(ordering, "ordering");
            return this;
        }

        /** Backoff and bound for retried records. Default {@link RetryPolicy#defaults()} (10 attempts). */
        public Builder<K, V> retryPolicy(RetryPolicy retryPolicy) {
            this.retryPolicy = Objects.requireNonNull(retryPolicy, "retryPolicy");
            return this;
        }

        /** The dead-letter topic of each source topic. Default {@code <topic>-dlt}. */
        public Builder<K, V> deadLetterTopic(Function<String, String> topicOf) {
            this.deadLetterTopic = Objects.requireNonNull(topicOf, "topicOf");
            return this;
        }

        /** Lets {@link #start()} create missing dead-letter topics (broker defaults). Default false: they must exist. */
        public Builder<K, V> createDeadLetterTopics(boolean create) {
            this.createDeadLetterTopics = create;
            return this;
        }

        /**
         * The producer for dead letters (not closed by the consumer); its {@code delivery.timeout.ms} must not exceed
         * the {@link #deadLetterTimeout}. Default: one built from the consumer's client settings (all of them but the
         * consumer-only ones: security, SASL and SSL included) with {@link KafkaProducers#recommendedSettings()} and
         * the dead-letter timeout as its delivery timeout, closed with the consumer.
         */
        public Builder<K, V> deadLetterProducer(Producer<byte[], byte[]> producer) {
            this.deadLetterProducer = Objects.requireNonNull(producer, "producer");
            return this;
        }

        /** How long a dead letter may take to be acknowledged before it is retried later. Default 30 s. */
        public Builder<K, V> deadLetterTimeout(Duration timeout) {
            this.deadLetterTimeout = positive("deadLetterTimeout", timeout);
            return this;
        }

        /** Threads that run handlers. Default 1. */
        public Builder<K, V> workers(int workers) {
            if (workers < 1 || workers > 1024) {
                throw new ConfigurationException("workers must be between 1 and 1024, got " + workers);
            }
            this.workers = workers;
            return this;
        }

        /** The longest a {@code poll} blocks while no handler runs. Default 100 ms. */
        public Builder<K, V> pollTimeout(Duration timeout) {
            this.pollTimeout = positive("pollTimeout", timeout);
            return this;
        }

        /** How long {@link #close()} waits for handlers to finish their record. Default 30 s. */
        public Builder<K, V> shutdownTimeout(Duration timeout) {
            this.shutdownTimeout = positive("shutdownTimeout", timeout);
            return this;
        }

        /**
         * How long one handler call may run: past it the handler's thread is interrupted (a guarded handler then
         * fails and is retried), a {@code HANDLER_TIMEOUT} event is raised, and {@link #health()} reports {@link
         * Health.State#STALLED} until it returns. Default: no limit.
         */
        public Builder<K, V> handlerTimeout(Duration timeout) {
            this.handlerTimeout = positive("handlerTimeout", timeout);
            return this;
        }

        /** The monotonic clock (nanoseconds, like {@link System#nanoTime()}) that times backoffs and handler timeouts. */
        public Builder<K, V> nanoTime(LongSupplier nanoTime) {
            this.nanoTime = Objects.requireNonNull(nanoTime, "nanoTime");
            return this;
        }

        /** Told about retries, dead letters, commits and handler timeouts. Default none. */
        public Builder<K, V> listener(IdempotencyListener listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
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
            if (handler == null && batchHandler == null) {
                throw new ConfigurationException("call .handler((key, record) -> guard.run(key, ...)) or"
                        + " .batchHandler(...) after the deserializers");
            }
            if (batchHandler != null && ordering == Ordering.KEY) {
                throw new ConfigurationException("a batch handler takes a partition's records in order: use"
                        + " Ordering.PARTITION with .batchHandler(...), or .handler(...) with Ordering.KEY");
            }
            String name = String.valueOf(consumerProperties.get(ConsumerConfig.GROUP_ID_CONFIG));
            return new IdempotentKafkaConsumer<>(new Settings<>(
                    name,
                    Map.copyOf(consumerProperties),
                    consumerFactory,
                    new ArrayList<>(topics),
                    keyDeserializer,
                    valueDeserializer,
                    keyExtractor,
                    handler,
                    batchHandler,
                    maxBatchSize,
                    ordering,
                    retryPolicy,
                    deadLetterTopic,
                    deadLetterProducer,
                    deadLetterTimeout,
                    createDeadLetterTopics,
                    workers,
                    pollTimeout,
                    shutdownTimeout,
                    handlerTimeout,
                    nanoTime,
                    listener));
        }

        private static Duration positive(String name, Duration value) {
            if (value == null || value.isNegative() || value.isZero()) {
                throw new ConfigurationException(name + " must be positive, got " + value);
            }
            return value;
        }
    }
}
