package dev.idem.rabbitmq;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.Recoverable;
import com.rabbitmq.client.ShutdownSignalException;
import dev.idem.ConfigurationException;
import dev.idem.IdempotencyListener;
import dev.idem.RetryPolicy;
import dev.idem.spi.FailureClassifier;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.jspecify.annotations.Nullable;

/**
 * Consumes a work queue with manual acks and hands each delivery to a guarded handler through a {@link
 * DeliveryProcessor} (ack, delayed retry through the retry queue, or dead letter with the reason).
 *
 * <pre>{@code
 * RabbitTopology topology = RabbitTopology.forQueue("payments");
 * IdempotentRabbitConsumer consumer = IdempotentRabbitConsumer.builder(connection, topology)
 *         .handler((key, message) -> guard.run(key, () -> debit(message.getBody())))
 *         .concurrency(4)
 *         .build()
 *         .start();
 * }</pre>
 *
 * <p><b>Concurrency.</b> {@code concurrency} channels, each with one consumer, prefetch {@code prefetch} and its own
 * handler thread: the messages of one channel are handled one at a time, in delivery order; channels run in parallel.
 *
 * <p><b>Channels.</b> A channel the broker closes (or that the processor aborts after a publisher-confirm timeout) is
 * reopened after the retry policy's initial delay; its unacked deliveries are redelivered by the broker. A lost
 * connection is the connection's business: with automatic recovery (amqp-client's default) the channels and consumers
 * come back with it; without, the consumer stops and {@link #failure()} says why (also when the connection is lost while a
 * channel waits to be reopened). Deliveries received before a channel
 * was lost are not handled (the broker redelivers them).
 *
 * <p>An {@link Error} thrown by the handler stops the consumer, and {@link #failure()} returns it: the channel it was
 * thrown on is aborted at once without acking its message, like a crash; the other channels stop receiving and finish
 * the message in hand, uninterrupted, as in {@link #close()} (a handler interrupted mid-transaction could leave the
 * database half-way), and their prefetched deliveries go back to the queue. Thread-safe; start it once.
 */
public final class IdempotentRabbitConsumer implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(IdempotentRabbitConsumer.class.getName());

    private final Connection connection;
    private final DeliveryProcessor processor;
    private final int prefetch;
    private final int concurrency;
    private final boolean declareTopology;
    private final Duration shutdownTimeout;
    private final Duration reopenDelay;

    private final Object lifecycle = new Object();
    /** Written by start() while a handler's crash may read it. */
    private final List<ConsumerChannel> channels = new CopyOnWriteArrayList<>();

    private volatile boolean stopping;
    private volatile boolean started;
    private volatile @Nullable Throwable failure;
    private @Nullable ScheduledExecutorService reopener;

    private IdempotentRabbitConsumer(Builder b) {
        this.connection = b.connection;
        this.processor = b.processor.build();
        this.prefetch = b.prefetch;
        this.concurrency = b.concurrency;
        this.declareTopology = b.declareTopology;
        this.shutdownTimeout = b.shutdownTimeout;
        this.reopenDelay = max(b.retryPolicy.initialDelay(), Duration.ofMillis(100));
    }

    /** A consumer of {@code topology}'s work queue on {@code connection} (which the caller owns and closes). */
    public static Builder builder(Connection connection, RabbitTopology topology) {
        return new Builder(connection, topology);
    }

    /**
     * Declares or verifies the topology, then opens the channels and starts consuming.
     *
     * @throws ConfigurationException when the topology is missing or its retry queue would not bring a copy back (and
     *     it is not declared by this consumer): see {@link RabbitTopology#verify}
     * @throws IOException when the broker refused a channel, the declarations or the subscription
     */
    public IdempotentRabbitConsumer start() throws IOException {
        synchronized (lifecycle) {
            if (started) {
                throw new IllegalStateException(
                        "consumer of " + processor.topology().workQueue() + " was already started");
            }
            started = true;
            try {
                subscribe();
            } catch (IOException | RuntimeException e) {
                close();
                throw e;
            }
            return this;
        }
    }

    private void subscribe() throws IOException {
        if (declareTopology) {
            try (var channel = connection.createChannel()) {
                processor.topology().declare(channel);
            } catch (java.util.concurrent.TimeoutException e) {
                throw new IOException("closing the channel used to declare the topology timed out", e);
            }
        } else {
            processor.topology().verify(connection);
        }
        reopener = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "idem-rabbitmq-" + processor.topology().workQueue() + "-reopen");
            t.setDaemon(true);
            return t;
        });
        for (int i = 0; i < concurrency; i++) {
            ConsumerChannel channel = new ConsumerChannel(this, i);
            channels.add(channel);
            channel.open();
        }
    }

    /** True from {@link #start()} until {@link #close()}, a handler's {@link Error} or a lost connection. */
    public boolean isRunning() {
        return started && !stopping && failure == null;
    }

    /** What stopped the consumer on its own: a handler's {@link Error}, a lost connection, a deleted queue. */
    public Optional<Throwable> failure() {
        return Optional.ofNullable(failure);
    }

    /**
     * Stops consuming (the broker stops sending), lets each channel finish the message in hand (up to the shutdown
     * timeout, then interrupts it) and closes the channels: deliveries prefetched but not handled go back to the queue.
     */
    @Override
    public void close() {
        synchronized (lifecycle) {
            stopping = true;
            if (reopener != null) {
                reopener.shutdownNow();
            }
            finishAll(channels);
        }
    }

    private void finishAll(List<ConsumerChannel> some) {
        some.forEach(ConsumerChannel::cancel);
        long deadline = System.nanoTime() + shutdownTimeout.toNanos();
        some.forEach(c -> c.finish(deadline));
    }

    DeliveryProcessor processor() {
        return processor;
    }

    Connection connection() {
        return connection;
    }

    int prefetch() {
        return prefetch;
    }

    boolean stopping() {
        return stopping || failure != null;
    }

    /**
     * A handler threw an {@link Error} on {@code crashed}: abort that channel, like a crash; the first crash also stops
     * the others as {@link #close()} does, on a thread of its own (this one is {@code crashed}'s handler thread).
     * Channels start() opens after this see {@link #stopping()} and stay closed.
     */
    void crash(Error e, ConsumerChannel crashed) {
        boolean first;
        synchronized (this) {
            first = failure == null;
            if (first) {
                failure = e;
            }
        }
        crashed.abort();
        if (!first) {
            return;
        }
        LOG.log(
                System.Logger.Level.ERROR,
                "consumer of " + processor.topology().workQueue()
                        + " stopped: the handler threw an Error; the message in hand is not acked",
                e);
        ScheduledExecutorService r = reopener;
        if (r != null) {
            r.shutdownNow();
        }
        List<ConsumerChannel> others = new ArrayList<>(channels);
        others.remove(crashed);
        Thread stopper = new Thread(
                () -> finishAll(others), "idem-rabbitmq-" + processor.topology().workQueue() + "-crash");
        stopper.setDaemon(true);
        stopper.start();
    }

    /** The connection is gone for good, or the queue was deleted. */
    synchronized void stopOn(Throwable cause) {
        if (failure == null && !stopping) {
            failure = cause;
            LOG.log(
                    System.Logger.Level.ERROR,
                    "consumer of " + processor.topology().workQueue() + " stopped: " + cause.getMessage());
        }
    }

    void reopenLater(ConsumerChannel channel) {
        ScheduledExecutorService r = reopener;
        if (r == null || stopping()) {
            return;
        }
        try {
            r.schedule(
                    () -> {
                        if (stopping() || channel.reopen()) {
                            return;
                        }
                        ShutdownSignalException lost = connection.getCloseReason();
                        if (lost != null && !(connection instanceof Recoverable)) {
                            stopOn(notRecovering(lost));
                        } else {
                            reopenLater(channel); // an open connection, or one that automatic recovery brings back
                        }
                    },
                    reopenDelay.toMillis(),
                    java.util.concurrent.TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // closing
        }
    }

    /** The cause {@link #failure()} gives for {@code lost}, a connection without automatic recovery. */
    static IOException notRecovering(ShutdownSignalException lost) {
        return new IOException(
                "the connection closed (" + lost.getMessage()
                        + ") and does not recover: enable automatic recovery on the ConnectionFactory",
                lost);
    }

    private static Duration max(Duration a, Duration b) {
        return a.compareTo(b) >= 0 ? a : b;
    }

    /** Builds an {@link IdempotentRabbitConsumer}. Each setter validates its value at once. */
    public static final class Builder {
        private final Connection connection;
        private final DeliveryProcessor.Builder processor;
        private RetryPolicy retryPolicy = RetryPolicy.defaults();
        private int prefetch = 10;
        private int concurrency = 1;
        private boolean declareTopology;
        private Duration shutdownTimeout = Duration.ofSeconds(30);

        private Builder(Connection connection, RabbitTopology topology) {
            this.connection = Objects.requireNonNull(connection, "connection");
            this.processor = DeliveryProcessor.builder(topology);
        }

        /** Where the key comes from. Default {@link KeyExtractor#messageId()}. */
        public Builder keyFrom(KeyExtractor extractor) {
            processor.keyFrom(extractor);
            return this;
        }

        /** Required: the guarded handler. */
        public Builder handler(MessageHandler handler) {
            processor.handler(handler);
            return this;
        }

        /** Backoff and bound for retried messages. Default {@link RetryPolicy#defaults()} (10 attempts). */
        public Builder retryPolicy(RetryPolicy retryPolicy) {
            this.retryPolicy = Objects.requireNonNull(retryPolicy, "retryPolicy");
            processor.retryPolicy(retryPolicy);
            return this;
        }

        /**
         * How a thrown exception is classified: a store or database that cannot be reached waits, uncounted; see {@link
         * FailureClassifier}. Default {@link FailureClassifier#standard()}.
         */
        public Builder classifier(FailureClassifier classifier) {
            processor.classifier(classifier);
            return this;
        }

        /** How long to wait for the broker to confirm a retry copy or a dead letter. Default 10 s. */
        public Builder confirmTimeout(Duration timeout) {
            processor.confirmTimeout(timeout);
            return this;
        }

        /** Told of every retry scheduled, dead letter and ack (source {@code "rabbitmq"}). */
        public Builder listener(IdempotencyListener listener) {
            processor.listener(listener);
            return this;
        }

        /** Unacked deliveries the broker sends each channel ahead ({@code basic.qos}). Default 10. */
        public Builder prefetch(int prefetch) {
            if (prefetch < 1 || prefetch > 65_535) {
                throw new ConfigurationException("prefetch must be 1 to 65535, got " + prefetch);
            }
            this.prefetch = prefetch;
            return this;
        }

        /** Channels consuming in parallel, one handler thread each. Default 1 (the queue's order kept). */
        public Builder concurrency(int concurrency) {
            if (concurrency < 1 || concurrency > 1_000) {
                throw new ConfigurationException("concurrency must be 1 to 1000, got " + concurrency);
            }
            this.concurrency = concurrency;
            return this;
        }

        /**
         * Declare the topology at {@link #start()} ({@link RabbitTopology#declare}). Default false: only verify it
         * ({@link RabbitTopology#verify}: it exists, and the retry queue has the arguments that bring a copy back).
         */
        public Builder declareTopology(boolean declare) {
            this.declareTopology = declare;
            return this;
        }

        /** How long {@link #close()} lets each channel finish the message in hand. Default 30 s. */
        public Builder shutdownTimeout(Duration timeout) {
            if (timeout == null || timeout.isNegative()) {
                throw new ConfigurationException("shutdownTimeout must be zero or positive, got " + timeout);
            }
            this.shutdownTimeout = timeout;
            return this;
        }

        public IdempotentRabbitConsumer build() {
            return new IdempotentRabbitConsumer(this);
        }
    }
}
