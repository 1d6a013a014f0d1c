package dev.idem.nats;

import static dev.idem.nats.NatsFixture.FAST_RETRY;
import static dev.idem.nats.NatsFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import dev.idem.testsupport.PaymentBank;
import dev.idem.testsupport.PrivateServer;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.Options;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Cause 3: the consumer's database commit succeeded but its ack never reached the server, so the message comes back
 * after AckWait (1 s here). Two ways to lose the ack: the consumer's connection is cut (a proxy swallows both
 * directions) right after the commit, or the server is restarted right after it.
 */
class CrashBeforeAckTest {
    private static final Duration ACK_WAIT = Duration.ofSeconds(1);

    static PaymentBank bank;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("NatsCrashBeforeAckTest");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    @Test
    void serverRestartAfterCommit_beforeAck_redeliveredAfterAckWait_unguardedDebitsTwice_guardsOnce() throws Exception {
        try (PrivateServer server = PrivateServer.nats();
                Connection nats = unbufferedConnection(server.url());
                NatsFixture.Streams streams = new NatsFixture.Streams(nats, "restartbeforeack")) {
            nats.jetStream().publish(NatsProducers.message(streams.subject("pay"), "pay-2", bytes("acc:100")));
            for (Debits mode : Debits.values()) {
                assertEffects(mode, crashAfterCommit(streams, mode, nats, nats, server::stop, () -> {
                    server.restart();
                    await().atMost(WAIT).until(() -> nats.getStatus() == Connection.Status.CONNECTED);
                }));
            }
        }
    }

    private static void assertEffects(Debits mode, Run run) {
        assertThat(run.redeliveries)
                .as(mode + ": the message came back after AckWait")
                .isNotEmpty();
        assertThat(run.redeliveries.get(0).deliveredCount).isGreaterThanOrEqualTo(2);
        if (mode == Debits.UNGUARDED) {
            assertThat(run.ledgerRows).as("unguarded effects").isEqualTo(2);
        } else {
            assertThat(run.ledgerRows).as(mode + " effects").isEqualTo(1);
            assertThat(run.redeliveries.get(0).outcome).isEqualTo(Outcome.Type.DUPLICATE);
        }
    }

    private record Delivery(long deliveredCount, Outcome.Type outcome) {}

    private record Run(long ledgerRows, List<Delivery> redeliveries) {}

    /**
     * The first handling commits its debit and then {@code cut}s the way to the server before the consumer acks; the
     * consumer on {@code first} is closed, {@code heal} runs, and a consumer on {@code second} handles the rest.
     */
    private static Run crashAfterCommit(
            NatsFixture.Streams streams, Debits mode, Connection second, Connection first, Runnable cut, Runnable heal)
            throws Exception {
        String name = mode.name().toLowerCase(Locale.ROOT);
        String prefix = streams.prefix + name;
        bank.open(prefix + "acc", 1000);
        String durable = streams.durable(name, ACK_WAIT, -1);
        MessageHandler effect = mode.handler(bank, streams.prefix + durable, prefix);
        CountDownLatch committed = new CountDownLatch(1);
        AtomicBoolean firstCopy = new AtomicBoolean(true);
        List<Delivery> redeliveries = new CopyOnWriteArrayList<>();
        try (IdempotentNatsConsumer consumer = consumer(streams, durable, first, (key, message) -> {
            Outcome outcome = effect.handle(key, message);
            if (firstCopy.getAndSet(false)) {
                cut.run();
                committed.countDown();
            } else {
                redeliveries.add(new Delivery(message.metaData().deliveredCount(), outcome.type()));
            }
            return outcome;
        })) {
            assertThat(committed.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
        }
        heal.run();
        try (IdempotentNatsConsumer consumer = consumer(streams, durable, second, (key, message) -> {
            Outcome outcome = effect.handle(key, message);
            redeliveries.add(new Delivery(message.metaData().deliveredCount(), outcome.type()));
            return outcome;
        })) {
            streams.awaitDone(durable);
        }
        return new Run(bank.ledgerRows(prefix + "acc"), redeliveries);
    }

    private static IdempotentNatsConsumer consumer(
            NatsFixture.Streams streams, String durable, Connection connection, MessageHandler handler)
            throws Exception {
        return IdempotentNatsConsumer.builder(connection)
                .consumer(streams.name, durable)
                .deadLetterSubject(streams.deadLetterSubject)
                .handler(handler)
                .retryPolicy(FAST_RETRY)
                .ackTimeout(Duration.ofMillis(500))
                .shutdownTimeout(WAIT)
                .build()
                .start();
    }

    /**
     * A connection that drops what is published while it is disconnected, as a crashed process would, instead of
     * sending its ack after the reconnect.
     */
    private static Connection unbufferedConnection(String url) throws Exception {
        return Nats.connect(Options.builder()
                .server(url)
                .reconnectBufferSize(0)
                .reconnectWait(Duration.ofMillis(100))
                .maxReconnects(-1)
                .build());
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
