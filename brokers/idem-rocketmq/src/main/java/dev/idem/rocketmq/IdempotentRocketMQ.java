package dev.idem.rocketmq;

import dev.idem.ConfigurationException;
import dev.idem.IdempotencyKey;
import dev.idem.IdempotencyListener;
import dev.idem.RetryPolicy;
import dev.idem.spi.DeliveryDecision;
import dev.idem.spi.FailureClassifier;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.MQProducer;
import org.apache.rocketmq.remoting.protocol.heartbeat.MessageModel;
import org.jspecify.annotations.Nullable;

/**
 * Guarded listeners for a RocketMQ push consumer: the handler runs through an Idem guard with the message's key, and
 * the listener turns its {@link dev.idem.Outcome} into RocketMQ's verbs.
 *
 * <pre>{@code
 * IdempotentRocketMQ idem = IdempotentRocketMQ.builder(consumer)
 *         .keyFrom(KeyExtractor.keys())
 *         .handler((key, message) -> guard.run(key, () -> debit(message)))
 *         .build();
 * consumer.registerMessageListener(idem.concurrently());
 * consumer.start();
 * }</pre>
 *
 * <p>By outcome (or exception), as {@link DeliveryDecision} decides for every adapter:
 *
 * <ul>
 *   <li>{@code PROCESSED}, {@code DUPLICATE}: {@code CONSUME_SUCCESS} (orderly: {@code SUCCESS}).
 *   <li>{@code FAILED}, {@code OUT_OF_ORDER}: retried after the {@link RetryPolicy} backoff (never later than the
 *       outcome's own {@code retryAfter}): {@code RECONSUME_LATER} with the first delay level at least that long
 *       (orderly: {@code SUSPEND_CURRENT_QUEUE_A_MOMENT} for that long). After {@code maxAttempts} handler attempts
 *       the message is dead-lettered with the reason. The concurrent listener counts them in RocketMQ's {@code
 *       reconsumeTimes}, the orderly one in memory: never in a property a producer could set.
 *   <li>{@code IN_PROGRESS} (the key is held elsewhere), and an exception whose chain shows a store or database that
 *       cannot be reached: retried the same way but never counted and never dead-lettered: the concurrent listener
 *       stores a copy in {@code %RETRY%<group>} that keeps the reconsume count, instead of RocketMQ's counted
 *       send-back.
 *   <li>{@code REJECTED}, no key, an unreadable key: at once a copy in {@code %DLQ%<group>} carrying {@value
 *       #DLQ_REASON}, {@value #DLQ_OUTCOME} and {@value #DLQ_ATTEMPTS} (and RocketMQ's {@code RETRY_TOPIC}: the
 *       original topic), then acknowledged. If that copy cannot be written, the message is retried (and
 *       dead-lettered again on its next delivery), never sent to {@code %DLQ%} without the reason.
 * </ul>
 *
 * <p>The attempt bound is the {@link RetryPolicy}'s alone: {@link Builder#build()} sets the consumer's {@code
 * maxReconsumeTimes} to {@code Integer.MAX_VALUE} so that RocketMQ never dead-letters a message by count (it would
 * also count, and dead-letter, a message whose key is merely in progress), and refuses a consumer on which it was set.
 *
 * <p>On a consumer left at RocketMQ's default {@code awaitTerminationMillisWhenShutdown} of 0, which makes {@code
 * shutdown()} interrupt every handler still running, {@link Builder#build()} sets it to {@value
 * #HANDLERS_END_WITHIN_MILLIS} ms: handlers get that long to end before they are interrupted (an interrupted effect
 * may be applied with its outcome unknown, then applied again on the redelivery). Set another value to change it.
 *
 * <p>Immutable and thread-safe. One instance per consumer; its listeners may be registered on that consumer only.
 */
public final class IdempotentRocketMQ {
    /** Dead-letter copy: why the message was dead-lettered (readable, never the payload). */
    public static final String DLQ_REASON = "IDEM_DLQ_REASON";
    /** Dead-letter copy: the outcome type, e.g. {@code REJECTED}. */
    public static final String DLQ_OUTCOME = "IDEM_DLQ_OUTCOME";
    /** Dead-letter copy: the handler attempts made. */
    public static final String DLQ_ATTEMPTS = "IDEM_DLQ_ATTEMPTS";

    /** How long {@code shutdown()} lets running handlers end, unless the consumer sets its own bound. */
    static final long HANDLERS_END_WITHIN_MILLIS = 30_000;

    private static final System.Logger LOG = System.getLogger(IdempotentRocketMQ.class.getName());

    private final ConcurrentListener concurrently;
    private final OrderlyListener orderly;
    private final List<String> warnings;

    private IdempotentRocketMQ(Builder b, List<String> warnings) {
        DefaultMQPushConsumer consumer = b.consumer;
        Events events = new Events(b.namespace(), b.listener, b.clock);
        Handling handling = new Handling(
                Objects.requireNonNull(b.keyExtractor),
                Objects.requireNonNull(b.handler),
                DeliveryDecision.of(b.retryPolicy, b.classifier),
                consumeTimeout(consumer),
                events);
        Supplier<MQProducer> producer = b.producer != null
                ? () -> b.producer
                : () -> consumer.getDefaultMQPushConsumerImpl()
                        .getmQClientFactory()
                        .getDefaultMQProducer();
        Resends resends = new Resends(consumer, producer);
        this.concurrently = new ConcurrentListener(handling, resends, b.delayLevels, events);
        this.orderly = new OrderlyListener(handling, resends, b.retryPolicy.initialDelay(), events);
        this.warnings = List.copyOf(warnings);
    }

    /** A builder for guarded listeners of {@code consumer} (not started yet, clustering mode). */
    public static Builder builder(DefaultMQPushConsumer consumer) {
        return new Builder(consumer);
    }

    /** The guarded concurrent listener: register it with {@code consumer.registerMessageListener(...)}. */
    public MessageListenerConcurrently concurrently() {
        return concurrently;
    }

    /** The guarded orderly listener (per-queue order): register it with {@code consumer.registerMessageListener}. */
    public MessageListenerOrderly orderly() {
        return orderly;
    }

    /** Configuration mismatches found by {@link Builder#build()} (also logged as warnings), e.g. the lease rule. */
    public List<String> warnings() {
        return warnings;
    }

    private static Duration consumeTimeout(DefaultMQPushConsumer consumer) {
        return Duration.ofMinutes(consumer.getConsumeTimeout());
    }

    /** Builds {@link IdempotentRocketMQ}. Each setter validates its value at once; {@link #build()} the rest. */
    public static final class Builder {
        private final DefaultMQPushConsumer consumer;
        private @Nullable KeyExtractor keyExtractor;
        private @Nullable MessageHandler handler;
        private RetryPolicy retryPolicy = RetryPolicy.defaults();
        private FailureClassifier classifier = FailureClassifier.standard();
        private DelayLevels delayLevels = DelayLevels.rocketmqDefault();
        private @Nullable MQProducer producer;
        private @Nullable String namespace;
        private @Nullable Duration lease;
        private boolean watchdog;
        private IdempotencyListener listener = IdempotencyListener.NONE;
        private Clock clock = Clock.systemUTC();

        private Builder(DefaultMQPushConsumer consumer) {
            this.consumer = Objects.requireNonNull(consumer, "consumer");
        }

        /** Required: where the idempotency key comes from ({@link KeyExtractor#keys()}, a property, ...). */
        public Builder keyFrom(KeyExtractor extractor) {
            this.keyExtractor = Objects.requireNonNull(extractor, "extractor");
            return this;
        }

        /** Required: the guarded handler, e.g. {@code (key, message) -> guard.run(key, () -> ...)}. */
        public Builder handler(MessageHandler handler) {
            this.handler = Objects.requireNonNull(handler, "handler");
            return this;
        }

        /** Backoff and attempt bound of retried messages. Default {@link RetryPolicy#defaults()}. */
        public Builder retryPolicy(RetryPolicy retryPolicy) {
            this.retryPolicy = Objects.requireNonNull(retryPolicy, "retryPolicy");
            return this;
        }

        /**
         * What a handler's exception stands for (a store that cannot be reached, a rejection, a failure), for a
         * framework whose exceptions the standard classifier does not know (e.g. Spring's). Default {@link
         * FailureClassifier#standard()}.
         */
        public Builder classifier(FailureClassifier classifier) {
            this.classifier = Objects.requireNonNull(classifier, "classifier");
            return this;
        }

        /** The broker's {@code messageDelayLevel} table. Default RocketMQ's ({@link DelayLevels#ROCKETMQ_DEFAULT}). */
        public Builder delayLevels(DelayLevels levels) {
            this.delayLevels = Objects.requireNonNull(levels, "levels");
            return this;
        }

        /**
         * The producer that writes dead-letter and retry copies. Default: the consumer's own client producer (the one
         * RocketMQ uses for its send-backs), which needs no lifecycle of its own.
         */
        public Builder producer(MQProducer producer) {
            this.producer = Objects.requireNonNull(producer, "producer");
            return this;
        }

        /**
         * Told of every acknowledgement ({@code COMMITTED}), retry ({@code RETRY_SCHEDULED}), dead letter ({@code
         * DEAD_LETTERED}) and handler that outran {@code consumeTimeout} ({@code HANDLER_TIMEOUT}), with source
         * {@code "rocketmq"} and attempt {@code reconsumeTimes + 1}. The guard reports its own handlings.
         */
        public Builder listener(IdempotencyListener listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /** The clock that stamps events. Default: system UTC. */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /** The namespace events and logs are reported under. Default: the consumer group. */
        public Builder namespace(String namespace) {
            this.namespace = IdempotencyKey.validateNamespace(namespace);
            return this;
        }

        /**
         * The lease of the guard the handler uses, and whether its watchdog extends it, so that {@link #build()} can
         * check it against the consumer's {@code consumeTimeout} (see {@link IdempotentRocketMQ#warnings()}). Leave
         * it out for guards without a lease (the JDBC inbox and the business guards hold a transaction instead).
         */
        public Builder lease(Duration lease, boolean watchdog) {
            if (lease == null || lease.isNegative() || lease.isZero()) {
                throw new ConfigurationException("lease must be positive, got " + lease);
            }
            this.lease = lease;
            this.watchdog = watchdog;
            return this;
        }

        private String namespace() {
            return namespace != null ? namespace : consumer.getConsumerGroup();
        }

        /**
         * Checks the configuration, sets the consumer's {@code maxReconsumeTimes} (see the class comment) and builds.
         *
         * @throws ConfigurationException if a key extractor or handler is missing, the consumer is in broadcasting
         *     mode (RocketMQ drops a broadcast message that is not consumed: nothing could be retried), uses a
         *     namespace, or has {@code maxReconsumeTimes} set
         */
        public IdempotentRocketMQ build() {
            if (keyExtractor == null) {
                throw new ConfigurationException("call .keyFrom(KeyExtractor.keys()) (or property(name) /"
                        + " uniqueKey()): no message is handled without a key");
            }
            if (handler == null) {
                throw new ConfigurationException("call .handler((key, message) -> guard.run(key, ...))");
            }
            if (consumer.getMessageModel() != MessageModel.CLUSTERING) {
                throw new ConfigurationException("consumer " + consumer.getConsumerGroup() + " is in "
                        + consumer.getMessageModel() + " mode, where RocketMQ drops a message that is not consumed:"
                        + " use MessageModel.CLUSTERING");
            }
            if (consumer.getNamespace() != null || consumer.getNamespaceV2() != null) {
                throw new ConfigurationException("consumer " + consumer.getConsumerGroup()
                        + " uses a RocketMQ namespace, which idem-rocketmq does not support yet: put the namespace in"
                        + " the group and topic names");
            }
            if (consumer.getMaxReconsumeTimes() != -1 && consumer.getMaxReconsumeTimes() != Integer.MAX_VALUE) {
                throw new ConfigurationException("consumer " + consumer.getConsumerGroup() + " sets maxReconsumeTimes="
                        + consumer.getMaxReconsumeTimes() + ": leave it unset and give the bound as"
                        + " .retryPolicy(...maxAttempts(n)); RocketMQ's own count would dead-letter messages whose"
                        + " key is only in progress elsewhere");
            }
            String ns = namespace();
            try {
                IdempotencyKey.validateNamespace(ns);
            } catch (ConfigurationException e) {
                throw new ConfigurationException(
                        "the consumer group '" + ns + "' is not a valid Idem namespace:"
                                + " call .namespace(\"...\") on the builder",
                        e);
            }
            List<String> warnings = new ArrayList<>();
            Duration consumeTimeout = consumeTimeout(consumer);
            if (lease != null && !watchdog && lease.compareTo(consumeTimeout) < 0) {
                warnings.add("consumer " + consumer.getConsumerGroup() + ": the guard's lease (" + lease
                        + ") is shorter than consumeTimeout (" + consumeTimeout + ") and no watchdog extends it. A"
                        + " handler that runs longer than the lease loses its claim while RocketMQ still waits for"
                        + " it, and RocketMQ sends the message back after consumeTimeout (apache/rocketmq#1600): its"
                        + " copy would then apply the effect again. Turn the guard's watchdog on, or make the lease at"
                        + " least consumeTimeout (consumer.setConsumeTimeout, in minutes).");
            }
            warnings.forEach(w -> LOG.log(System.Logger.Level.WARNING, w));
            consumer.setMaxReconsumeTimes(Integer.MAX_VALUE);
            if (consumer.getAwaitTerminationMillisWhenShutdown() == 0) {
                consumer.setAwaitTerminationMillisWhenShutdown(HANDLERS_END_WITHIN_MILLIS);
            }
            return new IdempotentRocketMQ(this, warnings);
        }
    }
}
