package dev.idem.nats;

import dev.idem.ConfigurationException;
import dev.idem.IdempotencyListener;
import dev.idem.RetryPolicy;
import dev.idem.spi.DeliveryDecision;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.PullSubscribeOptions;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.RetentionPolicy;
import java.io.IOException;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * A JetStream pull consumer that runs a guarded handler per message and answers the server by the handler's {@link
 * dev.idem.Outcome}.
 *
 * <pre>{@code
 * IdempotentNatsConsumer consumer = IdempotentNatsConsumer.builder(connection)
 *         .consumer("ORDERS", "payments")                 // an existing durable pull consumer, AckPolicy.Explicit
 *         .deadLetterSubject("dlq.payments")              // captured by a stream of its own
 *         .handler((key, message) -> guard.run(key, () -> charge(message.getData())))
 *         .build()
 *         .start();
 * }</pre>
 *
 * <p>Each delivery is settled by the core's {@link DeliveryDecision} (one rule for every Idem adapter), translated into
 * the server's verbs:
 *
 * <ul>
 *   <li>{@code PROCESSED}, {@code DUPLICATE}: {@code ackSync}: a COMMITTED event is reported once the server confirmed
 *       the ack. An ack that is lost anyway brings the message back after AckWait, and the guard answers DUPLICATE.
 *   <li>{@code IN_PROGRESS}, and a failure caused by a store or database that cannot be reached: {@code
 *       nakWithDelay}, an uncounted wait, never dead-lettered.
 *   <li>{@code OUT_OF_ORDER}, {@code FAILED}: {@code nakWithDelay(delay)}, the delay from the {@link RetryPolicy} (or
 *       the outcome's earlier {@code retryAfter}); dead-lettered after {@code maxAttempts} of them. A nak carries no
 *       count, so the consumer keeps the counts in memory by stream sequence (see {@code RetryCounts}).
 *   <li>{@code REJECTED}, a missing or unreadable key: published to the dead-letter subject with the reason in
 *       headers; the original is {@code term()}-ed only after the dead-letter stream's {@code PubAck}.
 * </ul>
 *
 * <p>While a handler runs its message is marked {@code inProgress()} every third of AckWait, so AckWait never
 * redelivers a message still being handled. {@link #start()} reads the durable consumer's configuration and refuses
 * what cannot work (see {@link Builder#build()}); the running consumer reads it again every AckWait, follows new pull
 * limits and stops on a configuration it refuses (see {@link #failure()}).
 *
 * <p>Dead letters carry the original data and application headers (not the {@code Nats-} ones the server acts on) plus {@value #DLQ_REASON}, {@value #DLQ_OUTCOME}, {@value
 * #DLQ_ATTEMPTS}, {@value #DLQ_STREAM}, {@value #DLQ_CONSUMER}, {@value #DLQ_SUBJECT}, {@value #DLQ_SEQUENCE} and the
 * original {@value NatsProducers#MSG_ID} as {@value #DLQ_MSG_ID}. One too large to carry the data is stored without
 * it, naming the original ({@value #DLQ_DATA_OMITTED}, {@value #DLQ_KEY}); the original is then terminated only when
 * its stream keeps it ({@code Limits} retention), and otherwise kept pending (see docs/nats.md).
 *
 * <p>Thread-safe; its settings are immutable. Start it once; {@link #close()} lets each worker finish its message.
 * The connection is the caller's: it is not closed, but it is reconnected when it says CONNECTED and answers no PING
 * after an empty pull (jnats stops reading on a header value outside printable ASCII; see {@code ReaderWatch}). An {@link Error} thrown by a handler stops the consumer without
 * acking that message (like a crash; see {@link #failure()}).
 */
public final class IdempotentNatsConsumer implements AutoCloseable {
    public static final String DLQ_REASON = "Idem-Dlq-Reason";
    public static final String DLQ_OUTCOME = "Idem-Dlq-Outcome";
    public static final String DLQ_ATTEMPTS = "Idem-Dlq-Attempts";
    public static final String DLQ_STREAM = "Idem-Dlq-Stream";
    public static final String DLQ_CONSUMER = "Idem-Dlq-Consumer";
    public static final String DLQ_SUBJECT = "Idem-Dlq-Subject";
    public static final String DLQ_SEQUENCE = "Idem-Dlq-Sequence";
    public static final String DLQ_MSG_ID = "Idem-Dlq-Msg-Id";
    /** On a dead letter stored without the data (too large): the idempotency key, as a key header carries it. */
    public static final String DLQ_KEY = "Idem-Dlq-Key";
    /**
     * On a dead letter stored without the data (too large): the data's size in bytes. The data is only in the original
     * stream, at {@value #DLQ_SEQUENCE}.
     */
    public static final String DLQ_DATA_OMITTED = "Idem-Dlq-Data-Omitted";

    private static final System.Logger LOG = System.getLogger(IdempotentNatsConsumer.class.getName());
    /** JetStream API error codes of a consumer, or a stream, that does not exist. */
    private static final int CONSUMER_NOT_FOUND = 10014;

    private static final int STREAM_NOT_FOUND = 10059;

    private final Connection connection;
    private final String stream;
    private final String durable;
    private final String deadLetterSubject;
    private final KeyExtractor keyExtractor;
    private final MessageHandler handler;
    private final RetryPolicy retryPolicy;
    private final int batchSize;
    private final int workers;
    private final Duration fetchWait;
    private final Duration ackTimeout;
    private final Duration shutdownTimeout;
    private final @Nullable Duration guardLease;
    private final IdempotencyListener listener;

    private final Object lifecycle = new Object();
    private final CountDownLatch stopped = new CountDownLatch(1);
    private final Semaphore freeWorkers;
    private final Set<Thread> workerThreads = ConcurrentHashMap.newKeySet();
    private volatile boolean stopping;
    /** Set before {@link #close()} interrupts the handlers that outlived the shutdown timeout. */
    private volatile boolean handlersInterrupted;

    private volatile @Nullable Throwable failure;
    private @Nullable Thread fetchThread;
    private volatile @Nullable ServerSettings settings;
    /** The last configuration check found the consumer or its stream missing (fetch thread only). */
    private boolean missedAtLastCheck;

    private IdempotentNatsConsumer(Builder b) {
        this.connection = b.connection;
        this.stream = Objects.requireNonNull(b.stream);
        this.durable = Objects.requireNonNull(b.durable);
        this.deadLetterSubject = Objects.requireNonNull(b.deadLetterSubject);
        this.keyExtractor = b.keyExtractor;
        this.handler = Objects.requireNonNull(b.handler);
        this.retryPolicy = b.retryPolicy;
        this.batchSize = b.batchSize;
        this.workers = b.workers;
        this.fetchWait = b.fetchWait;
        this.ackTimeout = b.ackTimeout;
        this.shutdownTimeout = b.shutdownTimeout;
        this.guardLease = b.guardLease;
        this.listener = b.listener;
        this.freeWorkers = new Semaphore(workers);
    }

    /** A builder on {@code connection} (not closed by the consumer). */
    public static Builder builder(Connection connection) {
        return new Builder(connection);
    }

    /**
     * Checks the durable consumer on the server, binds to it and starts fetching on its own thread.
     *
     * @throws ConfigurationException when the consumer or the dead-letter subject cannot work (named in the message)
     * @throws IOException when the server cannot be asked
     */
    public IdempotentNatsConsumer start() throws IOException {
        synchronized (lifecycle) {
            if (fetchThread != null) {
                throw new IllegalStateException("consumer " + durable + " was already started");
            }
            ServerSettings checked = readSettings();
            boolean termKeepsData = streamKeepsTerminatedMessages();
            checked.warnings().forEach(w -> LOG.log(System.Logger.Level.WARNING, w));
            JetStream jetStream = connection.jetStream();
            JetStreamSubscription subscription;
            try {
                subscription = jetStream.subscribe(null, PullSubscribeOptions.bind(stream, durable));
            } catch (JetStreamApiException e) {
                throw new ConfigurationException(
                        "cannot bind to consumer " + durable + " of stream " + stream + ": " + e.getMessage(), e);
            }
            MessageProcessing processing = new MessageProcessing(
                    durable,
                    keyExtractor,
                    handler,
                    DeliveryDecision.of(retryPolicy),
                    new DeadLetters(connection, jetStream, deadLetterSubject),
                    new NatsEvents(listener, durable),
                    ackTimeout,
                    this::checkConsumerNow,
                    () -> handlersInterrupted,
                    termKeepsData);
            settings = checked;
            Thread thread = new Thread(() -> fetchLoop(subscription, processing, checked), "idem-nats-" + durable);
            thread.setDaemon(true);
            fetchThread = thread;
            thread.start();
            return this;
        }
    }

    private ServerSettings readSettings() throws IOException {
        try {
            return checkServer();
        } catch (JetStreamApiException e) {
            throw new ConfigurationException(
                    "consumer " + durable + " of stream " + stream
                            + " cannot be read (" + e.getMessage() + "): create the stream and a durable pull consumer"
                            + " with AckPolicy.Explicit first",
                    e);
        }
    }

    /**
     * Whether a terminated message stays in the stream ({@code Limits} retention), so that a dead letter too large to
     * carry the data may name it there; {@code WorkQueue} and {@code Interest} retention delete it. Read once, at start.
     */
    private boolean streamKeepsTerminatedMessages() throws IOException {
        try {
            return connection
                            .jetStreamManagement()
                            .getStreamInfo(stream)
                            .getConfiguration()
                            .getRetentionPolicy()
                    == RetentionPolicy.Limits;
        } catch (JetStreamApiException e) {
            throw new ConfigurationException("stream " + stream + " cannot be read (" + e.getMessage() + ")", e);
        }
    }

    /**
     * Reads the durable consumer's own configuration and checks it again ({@link ServerSettings#checkConsumer}).
     *
     * @throws ConfigurationException the configuration is refused now
     */
    private ServerSettings checkConsumerNow() throws IOException, JetStreamApiException {
        ServerSettings again = ServerSettings.checkConsumer(
                stream,
                durable,
                connection
                        .jetStreamManagement()
                        .getConsumerInfo(stream, durable)
                        .getConsumerConfiguration(),
                guardLease);
        settings = again;
        return again;
    }

    /** Reads the durable consumer, its stream and the dead-letter streams, and checks them ({@link ServerSettings}). */
    private ServerSettings checkServer() throws IOException, JetStreamApiException {
        JetStreamManagement management = connection.jetStreamManagement();
        ConsumerConfiguration consumer =
                management.getConsumerInfo(stream, durable).getConsumerConfiguration();
        List<String> subjects =
                management.getStreamInfo(stream).getConfiguration().getSubjects();
        List<String> deadLetterStreams = management.getStreamNames(deadLetterSubject);
        return ServerSettings.check(
                stream,
                durable,
                consumer,
                subjects == null ? List.of() : subjects,
                deadLetterSubject,
                deadLetterStreams,
                guardLease);
    }

    /** The AckWait read from the server at {@link #start()}. */
    public Duration ackWait() {
        ServerSettings s = settings;
        if (s == null) {
            throw new IllegalStateException("consumer " + durable + " is not started");
        }
        return s.ackWait();
    }

    /** True from {@link #start()} until fetching ended (after {@link #close()} or a {@link #failure()}). */
    public boolean isRunning() {
        return fetchThread != null && stopped.getCount() > 0;
    }

    /**
     * What stopped this consumer: the {@link Error} a handler threw, the {@link ConfigurationException} of a durable
     * consumer edited on the server into one {@link #start()} refuses (read again every AckWait), or the fetch loop's
     * own crash.
     */
    public Optional<Throwable> failure() {
        return Optional.ofNullable(failure);
    }

    /**
     * Stops fetching, lets each worker finish its message and send its signal (waiting up to the shutdown timeout,
     * then interrupting them), and unsubscribes. The durable consumer and the connection stay.
     */
    @Override
    public void close() {
        stopping = true;
        Thread thread;
        synchronized (lifecycle) {
            thread = fetchThread;
        }
        if (thread == null || Thread.currentThread() == thread || workerThreads.contains(Thread.currentThread())) {
            return; // called from a handler: waiting here for the handlers to finish would wait for itself
        }
        try {
            stopped.await(shutdownTimeout.toMillis() + fetchWait.toMillis() + 10_000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void fetchLoop(JetStreamSubscription subscription, MessageProcessing processing, ServerSettings s) {
        AtomicInteger n = new AtomicInteger();
        ExecutorService executor = Executors.newFixedThreadPool(workers, r -> {
            Thread t = new Thread(r, "idem-nats-" + durable + "-worker-" + n.incrementAndGet());
            t.setDaemon(true);
            workerThreads.add(t);
            return t;
        });
        InProgressTicker ticker = new InProgressTicker(s.progressEvery(), durable);
        try {
            ServerSettings current = s;
            long nextCheck = System.nanoTime() + s.ackWait().toNanos();
            ReaderWatch readerWatch = new ReaderWatch(connection, "consumer " + durable + " of stream " + stream);
            while (!stopping) {
                if (System.nanoTime() - nextCheck >= 0) {
                    current = checkAgain(current);
                    nextCheck = System.nanoTime() + s.ackWait().toNanos();
                }
                int fetched = fetchOnce(
                        subscription,
                        processing,
                        ticker,
                        executor,
                        current.pullBatch(batchSize),
                        current.pullWait(fetchWait));
                if (fetched == 0) {
                    readerWatch.afterEmptyPull();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ConfigurationException e) {
            failure = e;
            LOG.log(System.Logger.Level.ERROR, "consumer " + durable + " stopped: " + e.getMessage());
        } catch (RuntimeException | Error e) {
            failure = e;
            LOG.log(System.Logger.Level.ERROR, "consumer " + durable + " stopped on an unexpected error", e);
        } finally {
            stopping = true;
            executor.shutdown();
            awaitWorkers(executor);
            ticker.close();
            unsubscribe(subscription);
            stopped.countDown();
        }
    }

    /**
     * Reads the durable consumer's configuration again: an operator may edit {@code MaxRequestBatch}, {@code
     * MaxRequestExpires}, {@code HeadersOnly} and {@code MaxDeliver} on a live consumer. New pull limits are followed;
     * a configuration {@link #start()} would refuse stops the consumer with the reason. So does a consumer (or its
     * stream) still not found one check after it was first missed: pulls to a deleted consumer come back empty without
     * a word, and the consumer would sit idle; a consumer deleted and created again in between is followed. When the
     * server cannot be asked or answers with another error (a restart, a leader election), the settings in hand stay.
     * The dead-letter subject is not checked again: while its stream is gone, the messages to dead-letter wait and are
     * retried.
     *
     * @throws ConfigurationException the configuration is refused now, or the consumer is gone
     */
    private ServerSettings checkAgain(ServerSettings current) {
        try {
            ServerSettings again = checkConsumerNow();
            missedAtLastCheck = false;
            return again;
        } catch (JetStreamApiException e) {
            if (e.getApiErrorCode() == CONSUMER_NOT_FOUND || e.getApiErrorCode() == STREAM_NOT_FOUND) {
                consumerMissing(e);
            } else {
                LOG.log(
                        System.Logger.Level.DEBUG,
                        () -> "consumer " + durable + ": configuration not read again: " + e);
            }
            return current;
        } catch (IOException | IllegalStateException e) {
            LOG.log(System.Logger.Level.DEBUG, () -> "consumer " + durable + ": configuration not read again: " + e);
            return current;
        }
    }

    private void consumerMissing(JetStreamApiException e) {
        String missing =
                "consumer " + durable + " of stream " + stream + " is not found on the server (" + e.getMessage() + ")";
        if (missedAtLastCheck) {
            throw new ConfigurationException(
                    missing + " for an AckWait now: it was deleted (by an operator, its"
                            + " InactiveThreshold, or with its stream); its messages wait in the stream: create the durable"
                            + " pull consumer again and start this consumer again",
                    e);
        }
        missedAtLastCheck = true;
        LOG.log(
                System.Logger.Level.WARNING,
                "{0}; nothing is fetched meanwhile, and the consumer stops at the next check unless it is created"
                        + " again",
                missing);
    }

    /**
     * Fetches as many messages as there are free workers (at most {@code pullBatch}, waiting at most {@code pullWait})
     * and hands each to one.
     *
     * @return how many messages the pull brought, or -1 when no pull was made
     */
    private int fetchOnce(
            JetStreamSubscription subscription,
            MessageProcessing processing,
            InProgressTicker ticker,
            ExecutorService executor,
            int pullBatch,
            Duration pullWait)
            throws InterruptedException {
        if (!freeWorkers.tryAcquire(fetchWait.toMillis(), TimeUnit.MILLISECONDS)) {
            return -1; // every worker busy: no pull
        }
        if (stopping) {
            // A pull now would leave a request on the server that takes the next delivery to a closing subscription.
            freeWorkers.release();
            return -1;
        }
        int drained = freeWorkers.drainPermits();
        int extra = Math.min(pullBatch - 1, drained);
        freeWorkers.release(drained - extra);
        int requested = 1 + extra;
        int received = 0;
        try {
            Iterator<Message> messages = subscription.iterate(requested, pullWait);
            while (messages.hasNext()) {
                Message message = messages.next();
                if (++received > requested) {
                    freeWorkers.acquire();
                }
                InProgressTicker.Tick tick = ticker.start(message);
                executor.execute(() -> work(processing, message, tick));
            }
        } catch (
                IllegalStateException
                        e) { // connection closed or reconnecting, or a pull status (JetStreamStatusException)
            if (!stopping) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "consumer {0}: fetch failed ({1}); trying again",
                        durable,
                        e.toString());
                Thread.sleep(fetchWait.toMillis());
            }
        } finally {
            freeWorkers.release(Math.max(0, requested - received));
        }
        return received;
    }

    private void work(MessageProcessing processing, Message message, InProgressTicker.Tick tick) {
        try {
            processing.process(message, tick);
        } catch (ConfigurationException e) {
            tick.stop();
            failure = e;
            stopping = true;
            LOG.log(
                    System.Logger.Level.ERROR,
                    "consumer " + durable + " stopped: " + e.getMessage() + "; " + MessageProcessing.describe(message)
                            + " is not acked and comes back after AckWait");
        } catch (Error e) {
            tick.stop();
            failure = e;
            stopping = true;
            LOG.log(
                    System.Logger.Level.ERROR,
                    "consumer " + durable + " stopped: the handler threw an Error on "
                            + MessageProcessing.describe(message) + "; it is not acked and comes back after AckWait",
                    e);
        } catch (RuntimeException e) {
            tick.stop();
            LOG.log(
                    System.Logger.Level.ERROR,
                    "consumer " + durable + ": " + MessageProcessing.describe(message)
                            + " left unacked after an unexpected error; it comes back after AckWait",
                    e);
        } finally {
            freeWorkers.release();
        }
    }

    private void awaitWorkers(ExecutorService executor) {
        try {
            if (!executor.awaitTermination(shutdownTimeout.toMillis(), TimeUnit.MILLISECONDS)) {
                handlersInterrupted = true;
                executor.shutdownNow();
                executor.awaitTermination(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            handlersInterrupted = true;
            executor.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }

    private void unsubscribe(JetStreamSubscription subscription) {
        try {
            subscription.unsubscribe();
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, () -> "consumer " + durable + ": unsubscribe failed: " + e);
        }
    }

    /**
     * Builds an {@link IdempotentNatsConsumer}. Each setter validates its value at once; {@link #build()} checks that
     * the consumer, the dead-letter subject and the handler were given. The server-side checks run at {@link
     * IdempotentNatsConsumer#start()}: the durable consumer must use {@code AckPolicy.Explicit}, deliver whole
     * messages (not {@code HeadersOnly}) and leave redelivery unbounded ({@code MaxDeliver} -1); the dead-letter
     * subject must be captured by a stream and must not lead back to this consumer.
     */
    public static final class Builder {
        private final Connection connection;
        private @Nullable String stream;
        private @Nullable String durable;
        private @Nullable String deadLetterSubject;
        private KeyExtractor keyExtractor = KeyExtractor.msgId();
        private @Nullable MessageHandler handler;
        private RetryPolicy retryPolicy = RetryPolicy.defaults();
        private int batchSize = 10;
        private int workers = 1;
        private Duration fetchWait = Duration.ofSeconds(1);
        private Duration ackTimeout = Duration.ofSeconds(5);
        private Duration shutdownTimeout = Duration.ofSeconds(30);
        private @Nullable Duration guardLease;
        private IdempotencyListener listener = IdempotencyListener.NONE;

        private Builder(Connection connection) {
            this.connection = Objects.requireNonNull(connection, "connection");
        }

        /** Required: the stream and its existing durable pull consumer (the guard's namespace is a good name). */
        public Builder consumer(String stream, String durable) {
            this.stream = name("stream", stream);
            this.durable = name("durable consumer", durable);
            return this;
        }

        /** Required: where dead letters go; a stream of its own must capture it. */
        public Builder deadLetterSubject(String subject) {
            this.deadLetterSubject = name("dead-letter subject", subject);
            if (subject.contains("*") || subject.contains(">")) {
                throw new ConfigurationException("the dead-letter subject must be a plain subject, got " + subject);
            }
            return this;
        }

        /** Where the idempotency key comes from. Default {@link KeyExtractor#msgId()}. */
        public Builder keyFrom(KeyExtractor extractor) {
            this.keyExtractor = Objects.requireNonNull(extractor, "extractor");
            return this;
        }

        /** Required: the guarded handler. */
        public Builder handler(MessageHandler handler) {
            this.handler = Objects.requireNonNull(handler, "handler");
            return this;
        }

        /** Back-off and bound for retried messages. Default {@link RetryPolicy#defaults()}. */
        public Builder retryPolicy(RetryPolicy retryPolicy) {
            this.retryPolicy = Objects.requireNonNull(retryPolicy, "retryPolicy");
            return this;
        }

        /**
         * The most messages one pull asks for (never more than the free workers, nor the consumer's {@code
         * MaxRequestBatch}). Default 10.
         */
        public Builder batchSize(int batchSize) {
            if (batchSize < 1 || batchSize > 10_000) {
                throw new ConfigurationException("batchSize must be between 1 and 10000, got " + batchSize);
            }
            this.batchSize = batchSize;
            return this;
        }

        /** Messages handled in parallel, each by one worker thread. Default 1. */
        public Builder workers(int workers) {
            if (workers < 1 || workers > 1024) {
                throw new ConfigurationException("workers must be between 1 and 1024, got " + workers);
            }
            this.workers = workers;
            return this;
        }

        /**
         * How long one pull waits for messages (never longer than the consumer's {@code MaxRequestExpires}); bounds how
         * soon {@link #close()} stops fetching. Default 1 s.
         */
        public Builder fetchWait(Duration wait) {
            this.fetchWait = positive("fetchWait", wait);
            return this;
        }

        /** How long {@code ackSync} waits for the server's confirmation. Default 5 s. */
        public Builder ackTimeout(Duration timeout) {
            this.ackTimeout = positive("ackTimeout", timeout);
            return this;
        }

        /** How long {@link #close()} waits for handlers to finish their message. Default 30 s. */
        public Builder shutdownTimeout(Duration timeout) {
            this.shutdownTimeout = positive("shutdownTimeout", timeout);
            return this;
        }

        /**
         * The lease of the lease-record guard the handler runs, if any: {@link #start()} warns when it is shorter
         * than the consumer's AckWait. Default: not checked.
         */
        public Builder guardLease(Duration lease) {
            this.guardLease = positive("guardLease", lease);
            return this;
        }

        /** Receives RETRY_SCHEDULED, DEAD_LETTERED and COMMITTED events (source {@code "nats"}). Default none. */
        public Builder listener(IdempotencyListener listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        public IdempotentNatsConsumer build() {
            if (stream == null || durable == null) {
                throw new ConfigurationException(
                        "call .consumer(\"STREAM\", \"durable\") on the builder: the consumer binds to an existing"
                                + " durable pull consumer");
            }
            if (deadLetterSubject == null) {
                throw new ConfigurationException("call .deadLetterSubject(\"dlq.<name>\") on the builder: a message"
                        + " the handler rejects is published there with its reason, never dropped");
            }
            if (handler == null) {
                throw new ConfigurationException("call .handler((key, message) -> guard.run(key, ...)) on the builder");
            }
            return new IdempotentNatsConsumer(this);
        }

        private static String name(String what, String value) {
            if (value == null || value.isBlank()) {
                throw new ConfigurationException("the " + what + " must not be blank");
            }
            return value;
        }

        private static Duration positive(String name, Duration value) {
            if (value == null || value.isNegative() || value.isZero()) {
                throw new ConfigurationException(name + " must be positive, got " + value);
            }
            return value;
        }
    }
}
