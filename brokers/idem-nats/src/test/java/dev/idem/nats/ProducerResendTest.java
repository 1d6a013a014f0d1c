package dev.idem.nats;

import static dev.idem.nats.NatsFixture.FAST_RETRY;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.RetryPolicy;
import dev.idem.testkit.TcpProxy;
import dev.idem.testsupport.PaymentBank;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamOptions;
import io.nats.client.api.PublishAck;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Cause 1 on the producer's side: the server's PubAck is lost and {@link NatsProducers#publish} publishes again. The
 * producer talks to the server through a {@link TcpProxy} that swallows the server's answers on the open connection;
 * its client notices the dead link and reconnects, and the resend goes through, within the stream's duplicate window.
 * (A resend the window does not catch reaches the consumer twice: the adapter contract's producer-resend scenario,
 * {@link NatsAdapterContractTest}.)
 */
class ProducerResendTest {
    private static final RetryPolicy RESEND = NatsFixture.FAST_RETRY.toBuilder()
            .initialDelay(Duration.ofMillis(200))
            .maxDelay(Duration.ofMillis(200))
            .maxAttempts(50)
            .build();

    static PaymentBank bank;
    static Connection nats;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("NatsProducerResendTest");
        nats = NatsFixture.connect();
    }

    @AfterAll
    static void tearDown() throws InterruptedException {
        nats.close();
        bank.close();
    }

    @Test
    void lostPubAck_resendWithMsgId_withinWindow_storedOnce_everyConsumerDebitsOnce() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "resendid");
                TcpProxy proxy = proxyToServer();
                Connection producer = NatsFixture.connectNoticingDeadLink("nats://127.0.0.1:" + proxy.port())) {
            JetStream js = shortTimeout(producer);
            js.publish(NatsProducers.message(streams.subject("pay"), "warmup", bytes("warmup:0")));
            proxy.blackholeExisting();
            PublishAck ack = NatsProducers.publish(
                    js, NatsProducers.message(streams.subject("pay"), "pay-1", bytes("acc:100")), RESEND);

            assertThat(ack.isDuplicate())
                    .as("the resend found the first copy stored")
                    .isTrue();
            assertThat(streams.stored()).as("warm-up and one copy").isEqualTo(2);
            assertThat(debits(streams, Debits.UNGUARDED, KeyExtractor.msgId()))
                    .as("the server's duplicate window dropped the resend: even the unguarded consumer debits once")
                    .isEqualTo(1);
        }
    }

    /** Consumes the whole stream with a durable consumer of its own; returns the ledger rows of account {@code acc}. */
    private static long debits(NatsFixture.Streams streams, Debits mode, KeyExtractor key) throws Exception {
        String prefix = streams.prefix + mode.name().toLowerCase(Locale.ROOT);
        bank.open(prefix + "acc", 1000);
        bank.open(prefix + "warmup", 0);
        String durable = streams.durable(mode.name().toLowerCase(Locale.ROOT), Duration.ofSeconds(2), -1);
        try (IdempotentNatsConsumer consumer = IdempotentNatsConsumer.builder(nats)
                .consumer(streams.name, durable)
                .deadLetterSubject(streams.deadLetterSubject)
                .keyFrom(key)
                .handler(mode.handler(bank, streams.prefix + durable, prefix))
                .retryPolicy(FAST_RETRY)
                .build()
                .start()) {
            streams.awaitDone(durable);
        }
        assertThat(streams.deadLetters()).isEmpty();
        return bank.ledgerRows(prefix + "acc");
    }

    private static TcpProxy proxyToServer() {
        URI server = URI.create(NatsFixture.url());
        return TcpProxy.start(server.getHost(), server.getPort());
    }

    private static JetStream shortTimeout(Connection connection) throws IOException {
        return connection.jetStream(
                JetStreamOptions.builder().requestTimeout(Duration.ofSeconds(1)).build());
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
