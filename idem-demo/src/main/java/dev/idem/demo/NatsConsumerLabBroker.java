package dev.idem.demo;

import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamManagement;
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
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A consumer lab over NATS JetStream: a stream on one subject, a durable pull consumer (explicit acks, AckWait 5 s,
 * no delivery limit) the consumer processes share, and a dead-letter stream. Every copy is a new message (a new
 * {@code Nats-Msg-Id}, what a resend after the duplicate window is), so the stream stores each; copies next to each
 * other reach two consumers at the same moment.
 */
final class NatsConsumerLabBroker implements ConsumerLabBroker {
    static final Duration ACK_WAIT = Duration.ofSeconds(5);

    private final String url;
    private final Connection connection;
    private final JetStreamManagement management;
    private final JetStream jetStream;
    private final String stream;
    private final String subject;
    private final String durable;
    private final String deadLetterStream;
    private final String deadLetterSubject;
    private final List<CompletableFuture<PublishAck>> pending = new ArrayList<>();
    private boolean created;

    NatsConsumerLabBroker(String url, String suffix) {
        this.url = url;
        try {
            this.connection = Nats.connect(Options.builder()
                    .server(url)
                    .connectionTimeout(Duration.ofSeconds(3))
                    .maxReconnects(-1)
                    .build());
            this.management = connection.jetStreamManagement();
            this.jetStream = connection.jetStream();
            management.getAccountStatistics();
        } catch (Exception e) {
            throw new LabOptions.BadOptionException("NATS with JetStream does not answer at " + url + " ("
                    + LabDatabase.rootMessage(e) + "): start nats-server -js or fix --nats-url");
        }
        this.stream = "IDEM_LAB_PAYMENTS_" + suffix.toUpperCase(java.util.Locale.ROOT);
        this.subject = "idem-lab." + suffix + ".payments";
        this.durable = "idem-lab-group-" + suffix;
        this.deadLetterStream = stream + "_DLQ";
        this.deadLetterSubject = "idem-lab." + suffix + ".dlq";
    }

    @Override
    public String id() {
        return "nats";
    }

    @Override
    public void prepare() throws Exception {
        management.addStream(StreamConfiguration.builder()
                .name(stream)
                .subjects(subject)
                .storageType(StorageType.File)
                .build());
        created = true;
        management.addStream(StreamConfiguration.builder()
                .name(deadLetterStream)
                .subjects(deadLetterSubject)
                .storageType(StorageType.File)
                .build());
        management.addOrUpdateConsumer(
                stream,
                ConsumerConfiguration.builder()
                        .durable(durable)
                        .ackPolicy(AckPolicy.Explicit)
                        .ackWait(ACK_WAIT)
                        .maxDeliver(-1)
                        .maxAckPending(1000)
                        .build());
    }

    @Override
    public Map<String, String> placeholders() {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("natsUrl", url);
        p.put("brokerUrl", url);
        p.put("stream", stream);
        p.put("subject", subject);
        p.put("topic", subject);
        p.put("group", durable);
        p.put("deadLetterSubject", deadLetterSubject);
        return p;
    }

    @Override
    public List<LabResult.Entry> environment() {
        List<LabResult.Entry> env = new ArrayList<>();
        env.add(new LabResult.Entry("nats", url));
        env.add(new LabResult.Entry(
                "stream",
                stream + " (subject " + subject + "), durable pull consumer " + durable + " (AckWait "
                        + ACK_WAIT.toSeconds() + " s), dead letters " + deadLetterStream + " (" + deadLetterSubject
                        + ")"));
        return env;
    }

    @Override
    public boolean consumersReady(int processes) throws Exception {
        return info().getNumWaiting() > 0;
    }

    @Override
    public void send(PaymentWorkload.Send send) throws Exception {
        Headers headers = new Headers()
                .add(PAYMENT_ID_HEADER, send.payment().id())
                .add("Nats-Msg-Id", UUID.randomUUID().toString());
        pending.add(jetStream.publishAsync(NatsMessage.builder()
                .subject(subject)
                .headers(headers)
                .data(send.payment().value().getBytes(StandardCharsets.UTF_8))
                .build()));
    }

    @Override
    public void flush() throws Exception {
        for (CompletableFuture<PublishAck> ack : pending) {
            ack.get(30, TimeUnit.SECONDS);
        }
        pending.clear();
    }

    @Override
    public long backlog() throws Exception {
        ConsumerInfo info = info();
        return info.getNumPending() + info.getNumAckPending();
    }

    private ConsumerInfo info() throws Exception {
        return management.getConsumerInfo(stream, durable);
    }

    @Override
    public void close() {
        try {
            if (created) {
                management.deleteStream(stream);
                management.deleteStream(deadLetterStream);
            }
        } catch (Exception e) {
            org.slf4j.LoggerFactory.getLogger(NatsConsumerLabBroker.class).warn("cannot delete the lab's streams", e);
        }
        try {
            connection.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
