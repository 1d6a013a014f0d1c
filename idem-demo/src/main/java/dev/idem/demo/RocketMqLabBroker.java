package dev.idem.demo;

import dev.idem.demo.ConsumerFaults.Fault;
import dev.idem.rocketmq.DelayLevels;
import dev.idem.rocketmq.IdempotentRocketMQ;
import dev.idem.rocketmq.KeyExtractor;
import dev.idem.rocketmq.RocketMQProducers;
import dev.idem.testsupport.EmbeddedRocketMQ;
import dev.idem.testsupport.RocketMQSend;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.topic.TopicValidator;
import org.jspecify.annotations.Nullable;

/**
 * The lab over RocketMQ: an in-process name server and broker (clients reach the broker through a TCP proxy, delay
 * levels of seconds) or {@code --rocketmq-namesrv}; one topic, one push-consumer group per strategy through {@link
 * IdempotentRocketMQ}, its key from the message's {@code KEYS}. Real duplicate causes:
 *
 * <ul>
 *   <li>a burst sent while the proxy swallows the broker's answers: the client retries the same {@code Message}
 *       (same msgId) and the broker stores both (in-process broker only);
 *   <li>the application sends a burst again as new {@code Message} objects (a new msgId; the same KEYS);
 *   <li>a consumer stopped after the database commit, before its offset is persisted (it acknowledges nothing from
 *       then on): the group's next consumer gets it again;
 *   <li>concurrent consumption of a queue reorders it; a retry goes back through {@code %RETRY%<group>}.
 * </ul>
 */
final class RocketMqLabBroker implements LabBroker {
    /** How long a stopping consumer waits for its running handlers before it interrupts them. */
    private static final Duration HANDLERS_END_WITHIN = Duration.ofSeconds(30);

    private final @Nullable EmbeddedRocketMQ embedded;
    private final String nameServer;
    private final int queues;
    private final String suffix = LabBroker.runSuffix();
    private final String topic = "idem-lab-orders-" + suffix;
    private final DefaultMQProducer producer;
    private final List<LabResult.Entry> environment = new ArrayList<>();
    private final AtomicInteger instances = new AtomicInteger();
    private final DelayLevels delayLevels;
    /** Per group: until when a copy sent back for a retry may still be on its way (System.nanoTime()). */
    private final Map<String, AtomicLong> retriesDueBy = new ConcurrentHashMap<>();

    private RocketMqLabBroker(LabOptions options, @Nullable EmbeddedRocketMQ embedded, String nameServer) {
        this.embedded = embedded;
        this.nameServer = nameServer;
        this.queues = options.partitions();
        this.delayLevels =
                embedded == null ? DelayLevels.rocketmqDefault() : DelayLevels.parse(EmbeddedRocketMQ.DELAY_LEVELS);
        producer = new DefaultMQProducer("idem-lab-producer-" + suffix);
        producer.setNamesrvAddr(nameServer);
        producer.setInstanceName("idem-lab-producer-" + suffix);
        RocketMQProducers.applyRecommendedSettings(producer);
        producer.setSendMsgMaxTimeoutPerRequest(1000);
        environment.add(new LabResult.Entry(
                "rocketmq",
                embedded == null
                        ? "external name server at " + nameServer
                        : "in-process name server at " + nameServer
                                + " and broker (clients through a TCP proxy, delay levels "
                                + EmbeddedRocketMQ.DELAY_LEVELS
                                + ")"));
    }

    static RocketMqLabBroker start(LabOptions options, java.io.PrintStream out, Runnable header) throws Exception {
        Optional<String> external = options.rocketmqNamesrv();
        if (external.isPresent()) {
            header.run();
            RocketMqLabBroker broker = new RocketMqLabBroker(options, null, external.get());
            broker.startProducer(() -> "RocketMQ does not answer at name server " + external.get()
                    + ": start one (mqnamesrv and mqbroker) or fix --rocketmq-namesrv, or leave it out to use the"
                    + " in-process broker");
            return broker;
        }
        header.run();
        out.println("  starting an in-process RocketMQ name server and broker ...");
        EmbeddedRocketMQ embedded = EmbeddedRocketMQ.start(Files.createTempDirectory("idem-lab-rocketmq"));
        RocketMqLabBroker broker = new RocketMqLabBroker(options, embedded, embedded.nameServer());
        broker.startProducer(() -> "the in-process RocketMQ broker does not answer");
        return broker;
    }

    private void startProducer(java.util.function.Supplier<String> problem) {
        try {
            producer.start();
            producer.getDefaultMQProducerImpl()
                    .getMqClientFactory()
                    .getMQClientAPIImpl()
                    .getTopicRouteInfoFromNameServer(TopicValidator.RMQ_SYS_SELF_TEST_TOPIC, 3000, false);
        } catch (Exception e) {
            producer.shutdown();
            throw new LabOptions.BadOptionException(problem.get() + " (" + LabDatabase.rootMessage(e) + ")");
        }
    }

    @Override
    public String id() {
        return "rocketmq";
    }

    @Override
    public void prepare(List<Strategy> strategies) throws Exception {
        if (embedded != null) {
            embedded.createTopic(topic, queues);
            for (Strategy s : strategies) {
                embedded.createGroupTopics(group(s));
            }
        } else {
            producer.createTopic(TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC, topic, queues, Map.of());
        }
        awaitRoute(topic);
        environment.add(new LabResult.Entry(
                "topic", topic + " (" + queues + " queues, one push-consumer group per strategy, key from KEYS)"));
    }

    private void awaitRoute(String name) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try {
                producer.fetchPublishMessageQueues(name);
                return;
            } catch (Exception e) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("topic " + name + " has no route", e);
                }
                Thread.sleep(200);
            }
        }
    }

    @Override
    public List<LabResult.Entry> environment() {
        return environment;
    }

    @Override
    public FlowProducer.Published publish(OrderFlow flow, LabOptions.Faults faults, LongConsumer progress)
            throws Exception {
        FlowPublishing.Copies copies = FlowPublishing.publish(flow.sends(), faults, progress, new Sender());
        return new FlowProducer.Published(
                flow.sends().size(),
                copies.clientRetries(),
                copies.appResends(),
                copies.bursts(),
                (embedded == null
                                ? "no lost send answers (n/a on an external rocketmq: the broker's address comes from"
                                        + " the name server, no proxy is in its path)"
                                : "send answers lost behind a TCP proxy, the client retries the same Message (same"
                                        + " msgId), stored twice")
                        + "; the application sends a burst again as new Message objects (new msgId, same KEYS)",
                "client retry after a lost send answer (same msgId)",
                "application resend as a new Message (new msgId)");
    }

    /** The flow's producer: each event to its queue, key in KEYS. */
    private final class Sender implements FlowPublishing.Sender {
        /**
         * One copy stored: sent again only when the client never wrote the request (see {@link RocketMQSend}), so
         * that the copies the lab counts stay exact.
         */
        @Override
        public void send(OrderFlow.Send s) throws Exception {
            RocketMQSend.toQueue(producer, message(s), s.partition());
        }

        @Override
        public void flush() {}

        @Override
        public long lostAckBurst(List<OrderFlow.Send> chunk) throws Exception {
            if (embedded == null) {
                for (OrderFlow.Send s : chunk) {
                    send(s);
                }
                return 0;
            }
            long before = storedCopies();
            ExecutorService senders = Executors.newFixedThreadPool(Math.min(chunk.size(), 32));
            try {
                embedded.proxy().blackholeExisting();
                List<Future<SendResult>> results = new ArrayList<>();
                for (OrderFlow.Send s : chunk) {
                    // The default send path: the client retries an attempt whose answer does not come.
                    results.add(senders.submit(() -> producer.send(message(s))));
                }
                for (Future<SendResult> r : results) {
                    check(r.get(60, TimeUnit.SECONDS));
                }
            } finally {
                senders.shutdownNow();
            }
            return storedCopies() - before - chunk.size();
        }

        @Override
        public long resendBurst(List<OrderFlow.Send> chunk) throws Exception {
            for (OrderFlow.Send s : chunk) {
                send(s);
                send(s);
            }
            return chunk.size();
        }
    }

    private Message message(OrderFlow.Send s) {
        Message m = new Message(topic, s.event().encode());
        m.setKeys(s.event().key());
        return m;
    }

    private static void check(SendResult result) {
        if (result.getSendStatus() != SendStatus.SEND_OK) {
            throw new IllegalStateException("send not stored: " + result);
        }
    }

    @Override
    public long storedCopies() throws Exception {
        return endOffsets(topic);
    }

    private long endOffsets(String name) throws Exception {
        long sum = 0;
        for (MessageQueue q : producer.fetchPublishMessageQueues(name)) {
            sum += producer.maxOffset(q);
        }
        return sum;
    }

    @Override
    public Optional<String> unavailable(Fault fault) {
        if (fault == Fault.TIMEOUT) {
            return Optional.of("the push consumer's consumeTimeout, which sends a message back while it is handled,"
                    + " is whole minutes (15 by default), longer than a lab run (brokers/idem-rocketmq checks the"
                    + " guard's lease against it)");
        }
        return Optional.empty();
    }

    @Override
    public String label(Fault fault) {
        return switch (fault) {
            case TIMEOUT -> "consumeTimeout, sent back while handled";
            case CONCURRENT -> "rebalance while handled: same message to two consumers at once";
            case CRASH -> "consumer stopped after DB commit, before the offset is persisted";
            case NONE -> "none";
        };
    }

    @Override
    public boolean overlapsInProcess() {
        return true;
    }

    @Override
    public Subscription subscribe(Strategy strategy, Handler handler) throws Exception {
        String group = group(strategy);
        AtomicLong dueBy = retriesDueBy.computeIfAbsent(group, g -> new AtomicLong(System.nanoTime()));
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(nameServer);
        consumer.setInstanceName(group + "-" + instances.incrementAndGet());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPersistConsumerOffsetInterval(200);
        consumer.setHeartbeatBrokerInterval(1000);
        consumer.setPollNameServerInterval(1000);
        consumer.setConsumeThreadMin(4);
        consumer.setConsumeThreadMax(4);
        consumer.setAwaitTerminationMillisWhenShutdown(HANDLERS_END_WITHIN.toMillis());
        consumer.subscribe(topic, "*");
        MessageListenerConcurrently guarded = IdempotentRocketMQ.builder(consumer)
                .keyFrom(KeyExtractor.keys())
                .handler((key, message) -> handler.handle(key, message.getBody()))
                .retryPolicy(StrategyRun.RETRY)
                .delayLevels(delayLevels)
                .build()
                .concurrently();
        AtomicReference<@Nullable Throwable> failure = new AtomicReference<>();
        consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            try {
                ConsumeConcurrentlyStatus status = guarded.consumeMessage(messages, context);
                if (status == ConsumeConcurrentlyStatus.RECONSUME_LATER) {
                    retrySentBack(dueBy, context.getDelayLevelWhenNextConsume());
                }
                return status;
            } catch (StrategyRun.InjectedCrash crash) {
                if (failure.compareAndSet(null, crash)) {
                    crash(consumer, group);
                }
                throw crash;
            }
        });
        try {
            consumer.start();
        } catch (Exception e) {
            consumer.shutdown(); // a half-started consumer would stay in the group, holding queues it never reads
            throw e;
        }
        return new Subscription() {
            @Override
            public boolean isRunning() {
                return failure.get() == null;
            }

            @Override
            public Optional<Throwable> failure() {
                return Optional.ofNullable(failure.get());
            }

            @Override
            public long settled() {
                long sum = 0;
                for (MessageQueue q : queues(topic)) {
                    sum += Math.max(0, offset(q));
                }
                return sum;
            }

            @Override
            public boolean finished() {
                if (System.nanoTime() - dueBy.get() < 0) {
                    return false;
                }
                try {
                    if (embedded != null && embedded.scheduledPending() > 0) {
                        return false; // a retry's delay has ended, but the broker has not sent it back yet
                    }
                    for (MessageQueue q : queues(topic)) {
                        if (offset(q) < producer.maxOffset(q)) {
                            return false;
                        }
                    }
                    for (MessageQueue q : queues(MixAll.getRetryTopic(group))) {
                        if (offset(q) < producer.maxOffset(q)) {
                            return false;
                        }
                    }
                    return true;
                } catch (Exception e) {
                    return false;
                }
            }

            private long offset(MessageQueue q) {
                return consumer.getDefaultMQPushConsumerImpl()
                        .getOffsetStore()
                        .readOffset(q, ReadOffsetType.READ_FROM_MEMORY);
            }

            @Override
            public void close() {
                if (failure.get() == null) {
                    consumer.shutdown();
                }
            }
        };
    }

    /**
     * Stops {@code consumer} like a killed process: from this instant nothing it handles is acknowledged (it pulls
     * no more and its queues are dropped, so RocketMQ acts on no result, this crash's included) and it persists
     * only the offsets acknowledged before. Its handlers still running end on their own before it shuts down:
     * {@code shutdown()} would interrupt them, which a killed process does not do to the rest of the lab's process
     * (an interrupt inside a transaction makes the embedded H2 close its database).
     */
    private static void crash(DefaultMQPushConsumer consumer, String group) {
        consumer.suspend();
        consumer.getDefaultMQPushConsumerImpl()
                .getRebalanceImpl()
                .getProcessQueueTable()
                .values()
                .forEach(q -> q.setDropped(true));
        Thread stop = new Thread(consumer::shutdown, group + "-crash");
        stop.setDaemon(true);
        stop.start();
    }

    private Collection<MessageQueue> queues(String name) {
        try {
            return producer.fetchPublishMessageQueues(name);
        } catch (Exception e) {
            return List.of();
        }
    }

    /**
     * A copy goes back through the schedule topic into {@code %RETRY%<group>} after its delay level's delay: until
     * then (and 2 s more) the group is not finished even when every queue it reads is consumed to its end.
     */
    private void retrySentBack(AtomicLong dueBy, int level) {
        if (level < 0) {
            return; // straight to %DLQ%
        }
        // Level 0 leaves it to the broker: level 3 for a first retry.
        long delay = delayLevels.delayOf(level == 0 ? 3 : level).toNanos();
        long due = System.nanoTime() + delay + TimeUnit.SECONDS.toNanos(2);
        dueBy.accumulateAndGet(due, (a, b) -> b - a > 0 ? b : a);
    }

    @Override
    public long deadLetters(Strategy strategy) throws Exception {
        try {
            return endOffsets(MixAll.getDLQTopic(group(strategy)));
        } catch (Exception e) {
            return 0; // no dead-letter topic: nothing was dead-lettered
        }
    }

    @Override
    public void close() {
        producer.shutdown();
        if (embedded != null) {
            embedded.close();
        }
    }

    private String group(Strategy s) {
        return "idem-lab-" + s.id().replace('_', '-') + "-" + suffix;
    }
}
