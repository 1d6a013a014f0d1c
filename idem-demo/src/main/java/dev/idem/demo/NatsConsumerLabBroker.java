package dev.idem.demo;

import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.PublishOptions;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.ConsumerInfo;
import io.nats.client.api.PublishAck;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A consumer lab over NATS JetStream: a stream on one subject, a durable pull consumer (explicit acks, AckWait 5 s,
 * no delivery limit) the consumer processes share, and a dead-letter stream. Every copy is a new message (a new
 * {@code Nats-Msg-Id}, what a resend after the duplicate window is), so the stream stores each; copies next to each
 * other reach two consumers at the same moment. A copy whose publish ack does not come (the client gives up on it after
 * its request timeout, a few seconds on a loaded machine) is published again with the same {@code Nats-Msg-Id}: the
 * stream stores it once whether or not the first publish reached it.
 */
final class NatsConsumerLabBroker implements ConsumerLabBroker {
    static final Duration ACK_WAIT = Duration.ofSeconds(5);
    private static final Duration PUBLISH_ACK_WAIT = Duration.ofSeconds(30);
    private static final PublishOptions WAIT_FOR_THE_ACK =
            PublishOptions.builder().streamTimeout(PUBLISH_ACK_WAIT).build();
    private static final int REPUBLISH_ATTEMPTS = 3;

    private final String url;
    private final Connection connection;
    private final JetStreamManagement management;
    private final JetStream jetStream;
    private final String stream;
    private final String subject;
    private final String durable;
    private final String deadLetterStream;
    private final String deadLetterSubject;
    private final List<Published> pending = new ArrayList<>();
    private boolean created;

    NatsConsumerLabBroker(String url, String suffix) {
        this.url = url;
        try {
            this.connection = NatsLabBroker.connect(url);
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
        NatsMessage message = message(send);
        track(message, jetStream.publishAsync(message));
    }

    /** The message of one copy: a new {@code Nats-Msg-Id} each. */
    NatsMessage message(PaymentWorkload.Send send) {
        return NatsMessage.builder()
                .subject(subject)
                .headers(new Headers()
                        .add(PAYMENT_ID_HEADER, send.payment().id())
                        .add("Nats-Msg-Id", UUID.randomUUID().toString()))
                .data(send.payment().value().getBytes(StandardCharsets.UTF_8))
                .build();
    }

    /** A copy published, its ack to come in {@link #flush()}. */
    void track(NatsMessage message, CompletableFuture<PublishAck> ack) {
        pending.add(new Published(message, ack));
    }

    @Override
    public void flush() throws Exception {
        for (Published p : pending) {
            try {
                p.ack().get(PUBLISH_ACK_WAIT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (ExecutionException | CancellationException | TimeoutException e) {
                publishAgain(p.message(), e);
            }
        }
        pending.clear();
    }

    /** Publishes {@code message} again, its {@code Nats-Msg-Id} unchanged: stored once whatever became of the first. */
    private void publishAgain(NatsMessage message, Exception first) throws Exception {
        Exception last = first;
        for (int attempt = 0; attempt < REPUBLISH_ATTEMPTS; attempt++) {
            try {
                jetStream.publish(message, WAIT_FOR_THE_ACK);
                return;
            } catch (IOException | JetStreamApiException e) {
                last = e;
            }
        }
        throw new IllegalStateException(
                "NATS did not acknowledge a payment copy published " + (REPUBLISH_ATTEMPTS + 1) + " times to " + subject
                        + " (" + LabDatabase.rootMessage(last) + "): is the JetStream server overloaded?",
                last);
    }

    private record Published(NatsMessage message, CompletableFuture<PublishAck> ack) {}

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
