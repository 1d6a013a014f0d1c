package dev.idem.nats;

import static org.awaitility.Awaitility.await;

import dev.idem.RetryPolicy;
import dev.idem.testkit.TcpProxy;
import dev.idem.testsupport.TestServers;
import io.nats.client.Connection;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.ConsumerInfo;
import io.nats.client.api.MessageInfo;
import io.nats.client.api.RetentionPolicy;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * What the NATS proofs share: connections to the server the fixture finds (or a private one), and per test a stream
 * and a dead-letter stream with unique names, deleted afterwards.
 */
final class NatsFixture {
    static final Duration WAIT = Duration.ofSeconds(30);
    /** Retry a message every 100 ms, for up to 30 s. */
    static final RetryPolicy FAST_RETRY = RetryPolicy.builder()
            .initialDelay(Duration.ofMillis(100))
            .multiplier(1.0)
            .maxDelay(Duration.ofMillis(100))
            .maxAttempts(300)
            .jitter(0.0)
            .build();

    private NatsFixture() {}

    static String url() {
        return TestServers.nats().url();
    }

    /**
     * A connection to the shared server that rides out a loaded machine: a client thread starved for a second or two
     * must not count as a dead link (it did, with the fast pings below, and failed a JetStream request in CI).
     */
    static Connection connect() {
        return connect(url(), Duration.ofSeconds(5));
    }

    /** A connection (through a proxy a test cuts) that notices a dead link within a second and reconnects at once. */
    static Connection connectNoticingDeadLink(String url) {
        return connect(url, Duration.ofMillis(300));
    }

    private static Connection connect(String url, Duration pingInterval) {
        try {
            return Nats.connect(Options.builder()
                    .server(url)
                    .pingInterval(pingInterval)
                    .maxPingsOut(2)
                    .reconnectWait(Duration.ofMillis(100))
                    .maxReconnects(-1)
                    .connectionTimeout(Duration.ofSeconds(5))
                    .build());
        } catch (IOException e) {
            throw new IllegalStateException("cannot connect to NATS at " + url, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * Cuts every connection through {@code proxy} off from the server for good: the open ones lose both directions
     * (their sockets stay open), and new ones never get the server's INFO, so a client cannot reconnect through it.
     */
    static void cutOff(TcpProxy proxy) {
        proxy.blackholeAll(true);
        proxy.partitionExisting();
    }

    /**
     * A stream capturing {@code <prefix>.>} and a dead-letter stream capturing {@code <prefix>-dlq}, on {@code
     * connection}'s server. Deleted by {@link #close()}.
     */
    static final class Streams implements AutoCloseable {
        final String name;
        final String prefix;
        final String deadLetterStream;
        final String deadLetterSubject;
        private final Connection connection;
        private final JetStreamManagement management;
        private final StreamConfiguration config;

        Streams(Connection connection, String testName, Duration duplicateWindow) {
            this(connection, testName, duplicateWindow, RetentionPolicy.Limits);
        }

        /** A stream with {@code retention} (WorkQueue, Interest: a term or ack deletes the message). */
        Streams(Connection connection, String testName, RetentionPolicy retention) {
            this(connection, testName, Duration.ofMinutes(2), retention);
        }

        private Streams(Connection connection, String testName, Duration duplicateWindow, RetentionPolicy retention) {
            this.prefix = TestServers.uniquePrefix(testName);
            this.name = prefix.toUpperCase();
            this.deadLetterStream = name + "_DLQ";
            this.deadLetterSubject = prefix + "-dlq";
            this.connection = connection;
            try {
                this.management = connection.jetStreamManagement();
                this.config = StreamConfiguration.builder()
                        .name(name)
                        .subjects(prefix + ".>")
                        .storageType(StorageType.File)
                        .duplicateWindow(duplicateWindow)
                        .retentionPolicy(retention)
                        .build();
                management.addStream(config);
                management.addStream(StreamConfiguration.builder()
                        .name(deadLetterStream)
                        .subjects(deadLetterSubject)
                        .storageType(StorageType.File)
                        .build());
            } catch (IOException | JetStreamApiException e) {
                throw new IllegalStateException("cannot create the test streams " + name, e);
            }
        }

        Streams(Connection connection, String testName) {
            this(connection, testName, Duration.ofMinutes(2));
        }

        /** Deletes the work stream (its consumers with it) and creates it again, empty: sequences start at 1 again. */
        void recreate() throws IOException, JetStreamApiException {
            management.deleteStream(name);
            management.addStream(config);
        }

        String subject(String suffix) {
            return prefix + "." + suffix;
        }

        /** A consumer of {@code durable} on this stream, dead-lettering to its dead-letter subject, retrying fast. */
        IdempotentNatsConsumer.Builder consumer(String durable) {
            return IdempotentNatsConsumer.builder(connection)
                    .consumer(name, durable)
                    .deadLetterSubject(deadLetterSubject)
                    .retryPolicy(FAST_RETRY);
        }

        /** Publishes {@code body} on {@code <prefix>.pay} with the message id {@code id}. */
        void publish(String id, String body) throws IOException, JetStreamApiException {
            connection
                    .jetStream()
                    .publish(NatsProducers.message(subject("pay"), id, body.getBytes(StandardCharsets.UTF_8)));
        }

        /** A durable pull consumer with explicit acks on the whole stream. */
        String durable(String durable, Duration ackWait, long maxDeliver) {
            try {
                management.addOrUpdateConsumer(
                        name,
                        ConsumerConfiguration.builder()
                                .durable(durable)
                                .ackPolicy(AckPolicy.Explicit)
                                .ackWait(ackWait)
                                .maxDeliver(maxDeliver)
                                .build());
                return durable;
            } catch (IOException | JetStreamApiException e) {
                throw new IllegalStateException("cannot create consumer " + durable, e);
            }
        }

        /** A durable pull consumer with explicit acks on the whole stream, with {@code settings} on top. */
        String durable(String durable, ConsumerConfiguration settings) {
            try {
                management.addOrUpdateConsumer(
                        name,
                        ConsumerConfiguration.builder(settings)
                                .durable(durable)
                                .ackPolicy(AckPolicy.Explicit)
                                .build());
                return durable;
            } catch (IOException | JetStreamApiException e) {
                throw new IllegalStateException("cannot create consumer " + durable, e);
            }
        }

        ConsumerInfo info(String durable) throws IOException, JetStreamApiException {
            return management.getConsumerInfo(name, durable);
        }

        /** Waits until {@code durable} has nothing left to deliver and nothing unacknowledged. */
        void awaitDone(String durable) {
            await().atMost(WAIT).until(() -> {
                ConsumerInfo info = info(durable);
                return info.getNumPending() == 0 && info.getNumAckPending() == 0;
            });
        }

        /** How many messages the stream holds. */
        long stored() throws IOException, JetStreamApiException {
            return management.getStreamInfo(name).getStreamState().getMsgCount();
        }

        /** The messages of the dead-letter stream, oldest first. */
        List<MessageInfo> deadLetters() throws IOException, JetStreamApiException {
            long last =
                    management.getStreamInfo(deadLetterStream).getStreamState().getLastSequence();
            List<MessageInfo> all = new ArrayList<>();
            for (long seq = 1; seq <= last; seq++) {
                all.add(management.getMessage(deadLetterStream, seq));
            }
            return all;
        }

        @Override
        public void close() {
            for (String stream : List.of(name, deadLetterStream)) {
                try {
                    management.deleteStream(stream);
                } catch (IOException | JetStreamApiException | RuntimeException e) {
                    System.err.println("[idem-nats test] could not delete stream " + stream + ": " + e);
                }
            }
        }
    }
}
