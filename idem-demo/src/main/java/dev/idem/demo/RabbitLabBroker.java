package dev.idem.demo;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.idem.Outcome;
import dev.idem.demo.ConsumerFaults.Fault;
import dev.idem.rabbitmq.IdempotentRabbitConsumer;
import dev.idem.rabbitmq.RabbitTopology;
import dev.idem.testkit.TcpProxy;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;

/**
 * The lab over RabbitMQ ({@code --rabbitmq-url}, the local server by default): the flow is published with publisher
 * confirms to a fanout exchange, which copies it into one quorum work queue per strategy ({@link RabbitTopology}: work,
 * retry and dead-letter queues), consumed through {@link IdempotentRabbitConsumer}. Real duplicate causes:
 *
 * <ul>
 *   <li>a burst published while a TCP proxy swallows the broker's confirms: the publisher cannot know it was stored
 *       and publishes it again (same {@code message-id});
 *   <li>the application publishes a burst again;
 *   <li>a consumer's connection is lost while a handler is inside its effect: the consumer stops, the broker requeues
 *       every unacked delivery of that connection and hands them to the next consumer ({@code redelivered=true});
 *   <li>a crash after the commit, before the ack (an {@link Error} aborts the consumer's channels): redelivered to
 *       the next consumer.
 * </ul>
 *
 * Every name carries a random suffix; {@link #close()} deletes the queues and exchanges.
 */
final class RabbitLabBroker implements LabBroker {
    /** Each physical publish's number: tells the copies of one message apart. */
    private static final String COPY_HEADER = "idem-lab-copy";

    private final URI uri;
    private final String displayUrl;
    private final int channels;
    private final String name = "idem-lab-" + LabBroker.runSuffix();
    private final String exchange = name + ".flow";
    private final Connection admin;
    private final Map<String, RabbitTopology> topologies = new LinkedHashMap<>();
    private final Map<String, Set<Long>> settledCopies = new ConcurrentHashMap<>();
    private final List<LabResult.Entry> environment = new ArrayList<>();
    private final AtomicLong copySequence = new AtomicLong();
    private long stored;

    private RabbitLabBroker(LabOptions options, URI uri, Connection admin) {
        this.uri = uri;
        this.displayUrl = LabDatabase.redact(options.rabbitmqUrl());
        this.channels = options.partitions();
        this.admin = admin;
        environment.add(new LabResult.Entry("rabbitmq", "server at " + displayUrl + " (" + serverVersion() + ")"));
    }

    static RabbitLabBroker start(LabOptions options, Runnable header) {
        URI uri = URI.create(options.rabbitmqUrl());
        Connection admin;
        try {
            admin = RabbitConnect.open(factory(uri, 0), "idem-lab-admin");
        } catch (Exception e) {
            throw new LabOptions.BadOptionException("RabbitMQ does not answer at "
                    + LabDatabase.redact(options.rabbitmqUrl()) + " (" + LabDatabase.rootMessage(e)
                    + "): start one (e.g. docker run -d -p 5672:5672 rabbitmq:3) or point --rabbitmq-url at yours");
        }
        header.run();
        return new RabbitLabBroker(options, uri, admin);
    }

    @Override
    public String id() {
        return "rabbitmq";
    }

    @Override
    public void prepare(List<Strategy> strategies) throws Exception {
        try (Channel channel = admin.createChannel()) {
            channel.exchangeDeclare(exchange, BuiltinExchangeType.FANOUT, true);
            for (Strategy s : strategies) {
                RabbitTopology topology = RabbitTopology.forQueue(name + "." + s.id());
                topologies.put(s.id(), topology);
                topology.declare(channel);
                channel.queueBind(topology.workQueue(), exchange, "");
                settledCopies.put(s.id(), ConcurrentHashMap.newKeySet());
            }
        }
        environment.add(new LabResult.Entry(
                "queues",
                "fanout exchange " + exchange + " into one quorum queue per strategy (" + name
                        + ".<strategy>, with .retry, .dlx, .dlq), " + channels + " consumer channels each"));
    }

    @Override
    public List<LabResult.Entry> environment() {
        return environment;
    }

    @Override
    public FlowProducer.Published publish(OrderFlow flow, LabOptions.Faults faults, LongConsumer progress)
            throws Exception {
        FlowPublishing.Copies copies;
        try (Connection connection = RabbitConnect.open(factory(uri, 0), "idem-lab-producer");
                TcpProxy proxy = TcpProxy.start(uri.getHost(), port(uri))) {
            Channel channel = connection.createChannel();
            channel.confirmSelect();
            copies = FlowPublishing.publish(flow.sends(), faults, progress, new FlowPublishing.Sender() {
                @Override
                public void send(OrderFlow.Send s) throws IOException {
                    publish(channel, s);
                }

                @Override
                public void flush() throws Exception {
                    channel.waitForConfirmsOrDie(30_000);
                }

                @Override
                public long lostAckBurst(List<OrderFlow.Send> chunk) throws Exception {
                    // Through the proxy, whose answers are swallowed: the broker stores the burst, its confirms never
                    // arrive, so the publisher publishes the burst again on its healthy connection.
                    Connection viaProxy = RabbitConnect.open(factory(uri, proxy.port()), "idem-lab-lost-confirms");
                    try {
                        Channel lost = viaProxy.createChannel();
                        lost.confirmSelect();
                        proxy.blackholeExisting();
                        for (OrderFlow.Send s : chunk) {
                            publish(lost, s);
                        }
                        if (confirmed(lost)) {
                            throw new IllegalStateException("the proxy let the confirms through: no lost confirm");
                        }
                    } finally {
                        viaProxy.abort(500);
                    }
                    for (OrderFlow.Send s : chunk) {
                        publish(channel, s);
                    }
                    flush();
                    return chunk.size();
                }

                @Override
                public long resendBurst(List<OrderFlow.Send> chunk) throws Exception {
                    for (OrderFlow.Send s : chunk) {
                        publish(channel, s);
                        publish(channel, s);
                    }
                    flush();
                    return chunk.size();
                }
            });
        }
        stored = depth(topologies.values().iterator().next().workQueue());
        return new FlowProducer.Published(
                flow.sends().size(),
                copies.clientRetries(),
                copies.appResends(),
                copies.bursts(),
                "publisher confirms lost behind a TCP proxy, the publisher publishes again (same message-id);"
                        + " the application publishes a burst twice",
                "producer resend after a lost confirm",
                "application resend of the same message");
    }

    private static boolean confirmed(Channel channel) throws InterruptedException {
        try {
            return channel.waitForConfirms(1500);
        } catch (TimeoutException e) {
            return false;
        }
    }

    private void publish(Channel channel, OrderFlow.Send s) throws IOException {
        OrderEvent e = s.event();
        AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
                .deliveryMode(2)
                .messageId(e.key())
                .headers(Map.of(COPY_HEADER, copySequence.incrementAndGet()))
                .build();
        channel.basicPublish(exchange, "", true, props, e.encode());
    }

    @Override
    public long storedCopies() {
        return stored;
    }

    @Override
    public Optional<String> unavailable(Fault fault) {
        return fault == Fault.CONCURRENT
                ? Optional.of("an unacked message is with one consumer at a time; two at once come from the"
                        + " redelivery of a lost connection (the line above)")
                : Optional.empty();
    }

    @Override
    public String label(Fault fault) {
        return switch (fault) {
            case TIMEOUT -> "connection lost while handled, redelivered before the ack";
            case CONCURRENT -> "same message to two consumers at once";
            case CRASH -> "crash after DB commit, before the ack";
            case NONE -> "none";
        };
    }

    @Override
    public Subscription subscribe(Strategy strategy, Handler handler) throws Exception {
        RabbitTopology topology = topologies.get(strategy.id());
        Set<Long> settled = settledCopies.get(strategy.id());
        TcpProxy proxy = TcpProxy.start(uri.getHost(), port(uri));
        Connection connection;
        IdempotentRabbitConsumer consumer;
        try {
            connection = RabbitConnect.open(factory(uri, proxy.port()), "idem-lab-" + strategy.id());
            consumer = IdempotentRabbitConsumer.builder(connection, topology)
                    .handler((key, message) -> {
                        Outcome outcome = handler.handle(key, message.getBody());
                        if (outcome.action() != Outcome.Action.RETRY) {
                            Object copy = message.getProperties().getHeaders().get(COPY_HEADER);
                            settled.add(((Number) copy).longValue());
                        }
                        return outcome;
                    })
                    .retryPolicy(StrategyRun.RETRY)
                    .concurrency(channels)
                    .prefetch(10)
                    .shutdownTimeout(Duration.ofSeconds(10))
                    .build()
                    .start();
        } catch (Exception e) {
            proxy.close();
            throw e;
        }
        return new Subscription() {
            private volatile boolean cut;

            /**
             * Without automatic recovery a lost connection ends the consumer; its channels may still be trying to
             * reopen on it, so the connection itself is asked too.
             */
            @Override
            public boolean isRunning() {
                return consumer.isRunning() && connection.isOpen();
            }

            @Override
            public boolean stoppedByInjection() {
                return cut || Subscription.super.stoppedByInjection();
            }

            @Override
            public Optional<Throwable> failure() {
                return consumer.failure();
            }

            @Override
            public long settled() {
                return settled.size();
            }

            @Override
            public boolean finished() {
                return settled.size() >= stored
                        && depth(topology.workQueue()) == 0
                        && depth(topology.retryQueue()) == 0;
            }

            @Override
            public void cutOff() {
                cut = true;
                proxy.dropAllConnections();
            }

            @Override
            public void close() {
                consumer.close();
                connection.abort();
                proxy.close();
            }
        };
    }

    @Override
    public long deadLetters(Strategy strategy) {
        return depth(topologies.get(strategy.id()).deadLetterQueue());
    }

    @Override
    public void close() {
        try (Channel channel = admin.createChannel()) {
            for (RabbitTopology t : topologies.values()) {
                channel.queueDelete(t.workQueue());
                channel.queueDelete(t.retryQueue());
                channel.queueDelete(t.deadLetterQueue());
                channel.exchangeDelete(t.deadLetterExchange());
            }
            channel.exchangeDelete(exchange);
        } catch (IOException | TimeoutException | RuntimeException e) {
            environment.add(new LabResult.Entry("clean-up", "could not delete " + name + ".*: " + e.getMessage()));
        } finally {
            admin.abort();
        }
    }

    private long depth(String queue) {
        try (Channel channel = admin.createChannel()) {
            return channel.queueDeclarePassive(queue).getMessageCount();
        } catch (IOException | TimeoutException e) {
            throw new IllegalStateException("cannot read the depth of RabbitMQ queue " + queue, e);
        }
    }

    private String serverVersion() {
        Object version = admin.getServerProperties().get("version");
        return "RabbitMQ " + (version == null ? "?" : version.toString());
    }

    private static int port(URI uri) {
        return uri.getPort() > 0 ? uri.getPort() : 5672;
    }

    private static ConnectionFactory factory(URI uri, int port) throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(uri);
        if (port != 0) {
            factory.setPort(port);
            factory.setHost("127.0.0.1");
        }
        factory.setConnectionTimeout(3000);
        factory.setNetworkRecoveryInterval(100);
        factory.setAutomaticRecoveryEnabled(false);
        return factory;
    }
}
