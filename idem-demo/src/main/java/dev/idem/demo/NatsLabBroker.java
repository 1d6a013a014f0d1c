package dev.idem.demo;

import dev.idem.demo.ConsumerFaults.Fault;
import dev.idem.nats.IdempotentNatsConsumer;
import dev.idem.nats.KeyExtractor;
import dev.idem.nats.NatsProducers;
import dev.idem.testkit.TcpProxy;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.JetStreamOptions;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.ConsumerInfo;
import io.nats.client.api.PublishAck;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;

/**
 * The lab over NATS JetStream ({@code --nats-url}, the local server by default): one stream holds the flow, one
 * durable pull consumer per strategy reads all of it through {@link IdempotentNatsConsumer} (AckWait 2 s), a
 * dead-letter stream captures a subject per strategy. Every message carries its business key in {@value #KEY_HEADER}
 * and a {@value NatsProducers#MSG_ID}. Real duplicate causes:
 *
 * <ul>
 *   <li>a burst published while a TCP proxy swallows the server's PubAcks, published again with the same {@value
 *       NatsProducers#MSG_ID}: the stream's duplicate window stores none twice (JetStream's own producer dedup);
 *   <li>the application publishes a burst again as new messages (a new {@value NatsProducers#MSG_ID}, what a resend
 *       after the duplicate window amounts to): stored twice;
 *   <li>a crash after the commit, before the ack (an {@link Error} stops the consumer): AckWait expires and the
 *       server redelivers to the next consumer.
 * </ul>
 *
 * The stream names carry a random suffix; {@link #close()} deletes them.
 */
final class NatsLabBroker implements LabBroker {
    /** The business key, the guards' key: the same on every copy, whatever its {@value NatsProducers#MSG_ID}. */
    static final String KEY_HEADER = "Idem-Key";

    private static final Duration ACK_WAIT = Duration.ofSeconds(2);

    private final String url;
    private final Connection connection;
    private final JetStreamManagement management;
    private final String suffix = LabBroker.runSuffix();
    private final String stream = "IDEM_LAB_" + suffix.toUpperCase(java.util.Locale.ROOT);
    private final String deadLetterStream = stream + "_DLQ";
    private final String subject = "idem-lab." + suffix + ".orders";
    private final List<LabResult.Entry> environment = new ArrayList<>();
    private boolean created;

    private NatsLabBroker(String url, Connection connection, JetStreamManagement management) {
        this.url = url;
        this.connection = connection;
        this.management = management;
        environment.add(new LabResult.Entry(
                "nats",
                "server at " + url + " (NATS " + connection.getServerInfo().getVersion() + ", JetStream)"));
    }

    static NatsLabBroker start(LabOptions options, Runnable header) {
        String url = options.natsUrl();
        Connection connection;
        try {
            connection = connect(url);
        } catch (Exception e) {
            throw new LabOptions.BadOptionException("NATS does not answer at " + url + " (" + LabDatabase.rootMessage(e)
                    + "): start one with JetStream (nats-server -js) or point --nats-url at yours");
        }
        JetStreamManagement management;
        try {
            management = connection.jetStreamManagement();
            management.getAccountStatistics();
        } catch (Exception e) {
            close(connection);
            throw new LabOptions.BadOptionException("NATS at " + url + " has no JetStream ("
                    + LabDatabase.rootMessage(e) + "): start the server with -js, or point --nats-url at one that has");
        }
        header.run();
        return new NatsLabBroker(url, connection, management);
    }

    @Override
    public String id() {
        return "nats";
    }

    @Override
    public void prepare(List<Strategy> strategies) throws Exception {
        management.addStream(StreamConfiguration.builder()
                .name(stream)
                .subjects(subject)
                .storageType(StorageType.File)
                .duplicateWindow(Duration.ofMinutes(2))
                .build());
        created = true;
        management.addStream(StreamConfiguration.builder()
                .name(deadLetterStream)
                .subjects("idem-lab." + suffix + ".dlq.*")
                .storageType(StorageType.File)
                .build());
        for (Strategy s : strategies) {
            management.addOrUpdateConsumer(
                    stream,
                    ConsumerConfiguration.builder()
                            .durable(durable(s))
                            .ackPolicy(AckPolicy.Explicit)
                            .ackWait(ACK_WAIT)
                            .maxDeliver(-1)
                            .maxAckPending(1000)
                            .build());
        }
        environment.add(new LabResult.Entry(
                "streams",
                stream + " (subject " + subject + ", one durable pull consumer per strategy, AckWait "
                        + ACK_WAIT.toSeconds() + " s) and " + deadLetterStream));
    }

    @Override
    public List<LabResult.Entry> environment() {
        return environment;
    }

    @Override
    public FlowProducer.Published publish(OrderFlow flow, LabOptions.Faults faults, LongConsumer progress)
            throws Exception {
        JetStream js = connection.jetStream();
        List<CompletableFuture<PublishAck>> pending = new ArrayList<>();
        long[] deduped = new long[1];
        URI server = URI.create(url);
        FlowPublishing.Copies copies;
        try (TcpProxy proxy = TcpProxy.start(server.getHost(), server.getPort() > 0 ? server.getPort() : 4222)) {
            copies = FlowPublishing.publish(flow.sends(), faults, progress, new FlowPublishing.Sender() {
                @Override
                public void send(OrderFlow.Send s) {
                    pending.add(js.publishAsync(message(s, s.event().key())));
                }

                @Override
                public void flush() throws Exception {
                    for (CompletableFuture<PublishAck> ack : pending) {
                        ack.get(30, TimeUnit.SECONDS);
                    }
                    pending.clear();
                }

                @Override
                public long lostAckBurst(List<OrderFlow.Send> chunk) throws Exception {
                    Connection viaProxy = connect("nats://127.0.0.1:" + proxy.port());
                    List<CompletableFuture<PublishAck>> lost = new ArrayList<>();
                    try {
                        JetStream lossy = viaProxy.jetStream(JetStreamOptions.builder()
                                .requestTimeout(Duration.ofSeconds(1))
                                .build());
                        proxy.blackholeExisting();
                        for (OrderFlow.Send s : chunk) {
                            lost.add(lossy.publishAsync(message(s, s.event().key())));
                        }
                        viaProxy.flushBuffer();
                        Thread.sleep(1500);
                        if (lost.stream().anyMatch(f -> f.isDone() && !f.isCompletedExceptionally())) {
                            throw new IllegalStateException("the proxy let the PubAcks through: no lost ack");
                        }
                    } finally {
                        close(viaProxy);
                    }
                    // The producer publishes again what it has no PubAck for, with the same Nats-Msg-Id.
                    long stored = 0;
                    for (OrderFlow.Send s : chunk) {
                        PublishAck ack =
                                NatsProducers.publish(js, message(s, s.event().key()), StrategyRun.RETRY);
                        if (ack.isDuplicate()) {
                            deduped[0]++;
                        } else {
                            stored++;
                        }
                    }
                    return stored;
                }

                @Override
                public long resendBurst(List<OrderFlow.Send> chunk) throws Exception {
                    for (OrderFlow.Send s : chunk) {
                        js.publish(message(s, s.event().key()));
                        js.publish(message(s, s.event().key() + "#resend"));
                    }
                    return chunk.size();
                }
            });
        }
        return new FlowProducer.Published(
                flow.sends().size(),
                copies.clientRetries(),
                copies.appResends(),
                copies.bursts(),
                "PubAcks lost behind a TCP proxy, published again with the same Nats-Msg-Id (" + deduped[0]
                        + " answered duplicate by the stream's 2-minute window, stored once); the application"
                        + " publishes a burst again as new messages (new Nats-Msg-Id), stored twice",
                "producer resend after a lost PubAck, stored twice",
                "application resend as a new message (new Nats-Msg-Id)");
    }

    private Message message(OrderFlow.Send s, String messageId) {
        OrderEvent e = s.event();
        Message m = NatsProducers.message(subject, messageId, e.encode());
        Headers headers = new Headers(m.getHeaders()).put(KEY_HEADER, e.key());
        return NatsMessage.builder()
                .subject(subject)
                .headers(headers)
                .data(e.encode())
                .build();
    }

    @Override
    public long storedCopies() throws Exception {
        return management.getStreamInfo(stream).getStreamState().getMsgCount();
    }

    @Override
    public Optional<String> unavailable(Fault fault) {
        return switch (fault) {
            case TIMEOUT, CONCURRENT ->
                Optional.of("the adapter's inProgress() keeps AckWait from expiring while a handler works, so the"
                        + " server hands a message to a second consumer only when the first one's link is cut"
                        + " (brokers/idem-nats ConcurrentHandlingTest)");
            default -> Optional.empty();
        };
    }

    @Override
    public String label(Fault fault) {
        return switch (fault) {
            case TIMEOUT -> "AckWait expired while handled, redelivered";
            case CONCURRENT -> "same message to two consumers at once";
            case CRASH -> "crash after DB commit, before the ack (AckWait redelivers)";
            case NONE -> "none";
        };
    }

    @Override
    public Subscription subscribe(Strategy strategy, Handler handler) throws Exception {
        String durable = durable(strategy);
        IdempotentNatsConsumer consumer = IdempotentNatsConsumer.builder(connection)
                .consumer(stream, durable)
                .deadLetterSubject(deadLetterSubject(strategy))
                .keyFrom(KeyExtractor.header(KEY_HEADER))
                .handler((key, message) -> handler.handle(key, message.getData()))
                .retryPolicy(StrategyRun.RETRY)
                .workers(4)
                .batchSize(20)
                .fetchWait(Duration.ofMillis(200))
                .shutdownTimeout(Duration.ofSeconds(10))
                .build()
                .start();
        return new Subscription() {
            @Override
            public boolean isRunning() {
                return consumer.isRunning();
            }

            @Override
            public Optional<Throwable> failure() {
                return consumer.failure();
            }

            @Override
            public long settled() {
                ConsumerInfo info = info(durable);
                return info == null ? 0 : info.getAckFloor().getStreamSequence();
            }

            @Override
            public boolean finished() {
                ConsumerInfo info = info(durable);
                return info != null && info.getNumPending() == 0 && info.getNumAckPending() == 0;
            }

            @Override
            public void close() {
                consumer.close();
            }
        };
    }

    @Override
    public long deadLetters(Strategy strategy) throws Exception {
        return management
                .getStreamInfo(
                        deadLetterStream,
                        io.nats.client.api.StreamInfoOptions.filterSubjects(deadLetterSubject(strategy)))
                .getStreamState()
                .getSubjectMap()
                .getOrDefault(deadLetterSubject(strategy), 0L);
    }

    @Override
    public void close() {
        try {
            if (created) {
                management.deleteStream(stream);
                management.deleteStream(deadLetterStream);
            }
        } catch (IOException | JetStreamApiException | RuntimeException e) {
            environment.add(new LabResult.Entry(
                    "clean-up", "could not delete " + stream + " / " + deadLetterStream + ": " + e.getMessage()));
        } finally {
            close(connection);
        }
    }

    private ConsumerInfo info(String durable) {
        try {
            return management.getConsumerInfo(stream, durable);
        } catch (IOException | JetStreamApiException e) {
            return null;
        }
    }

    private static String durable(Strategy s) {
        return "idem-lab-" + s.id().replace('_', '-');
    }

    private String deadLetterSubject(Strategy s) {
        return "idem-lab." + suffix + ".dlq." + s.id();
    }

    /**
     * A connection of the labs to NATS, reconnecting for ever. The handshake may take 15 s: on a machine at load 20 a
     * 3 s limit failed the consumer lab's start against a NATS that was up ("Unable to connect"); a refused
     * connection still fails at once.
     */
    static Connection connect(String url) throws IOException, InterruptedException {
        return Nats.connect(Options.builder()
                .server(url)
                .connectionTimeout(Duration.ofSeconds(15))
                .maxReconnects(-1)
                .reconnectWait(Duration.ofMillis(100))
                .build());
    }

    private static void close(Connection connection) {
        try {
            connection.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
