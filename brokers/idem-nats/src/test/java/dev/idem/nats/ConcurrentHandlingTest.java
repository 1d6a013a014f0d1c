package dev.idem.nats;

import static dev.idem.nats.NatsFixture.FAST_RETRY;
import static dev.idem.nats.NatsFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Outcome;
import dev.idem.testkit.TcpProxy;
import dev.idem.testsupport.PaymentBank;
import io.nats.client.Connection;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.PullSubscribeOptions;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Causes 2 and 4: a handler works longer than AckWait (1 s here), the server redelivers the message to a second
 * consumer, and two handlers of one message run at once. A plain jnats consumer meets it; the adapter's {@code
 * inProgress()} signals prevent it; when those signals cannot reach the server (the first consumer's link is cut), the
 * redelivery does happen, and the lease guard answers it IN_PROGRESS until the first handling is done.
 */
class ConcurrentHandlingTest {
    private static final Duration ACK_WAIT = Duration.ofSeconds(1);
    /** How long the slow handler works: three AckWaits. */
    private static final Duration SLOW = ACK_WAIT.multipliedBy(3);

    static PaymentBank bank;
    static Connection nats;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("NatsConcurrentHandlingTest");
        nats = NatsFixture.connect();
    }

    @AfterAll
    static void tearDown() throws InterruptedException {
        nats.close();
        bank.close();
    }

    @Test
    void slowHandler_plainConsumerWithoutInProgress_ackWaitRedeliversToSecondConsumer_twoHandlersAtOnce()
            throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "plainslow");
                Connection other = NatsFixture.connect()) {
            String durable = streams.durable("plain", ACK_WAIT, -1);
            String account = streams.prefix + "acc";
            bank.open(account, 1000);
            nats.jetStream().publish(NatsProducers.message(streams.subject("pay"), "pay-1", bytes("acc:100")));
            JetStreamSubscription first = bind(nats, streams, durable);
            JetStreamSubscription second = bind(other, streams, durable);

            List<Message> firstCopy = first.fetch(1, WAIT);
            assertThat(firstCopy).hasSize(1);
            // The first handler is still working: the second consumer gets the same message after AckWait.
            List<Message> secondCopy = second.fetch(1, SLOW);
            assertThat(secondCopy).hasSize(1);
            assertThat(secondCopy.get(0).metaData().deliveredCount()).isEqualTo(2);
            bank.debit(account, 100, "pay-1");
            secondCopy.get(0).ackSync(WAIT);
            bank.debit(account, 100, "pay-1");
            firstCopy.get(0).ack();

            assertThat(bank.ledgerRows(account)).as("both handlers debited").isEqualTo(2);
        }
    }

    @Test
    void slowHandler_adapterSendsInProgress_noRedeliveryWhileItWorks_evenUnguardedDebitsOnce() throws Exception {
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "adapterslow");
                Connection other = NatsFixture.connect()) {
            String durable = streams.durable("adapter", ACK_WAIT, -1);
            String prefix = streams.prefix;
            bank.open(prefix + "acc", 1000);
            CountDownLatch started = new CountDownLatch(1);
            List<Long> deliveries = new CopyOnWriteArrayList<>();
            MessageHandler slow = Debits.UNGUARDED.handler(bank, durable, prefix, message -> {
                deliveries.add(message.metaData().deliveredCount());
                started.countDown();
                workFor(SLOW);
            });
            JetStreamSubscription second = bind(other, streams, durable);
            try (IdempotentNatsConsumer consumer = consumer(streams, durable, nats, slow)) {
                nats.jetStream().publish(NatsProducers.message(streams.subject("pay"), "pay-2", bytes("acc:100")));
                assertThat(started.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
                assertThat(second.fetch(1, SLOW))
                        .as("no redelivery while the handler works past AckWait")
                        .isEmpty();
                streams.awaitDone(durable);
            }

            assertThat(deliveries).containsExactly(1L);
            assertThat(bank.ledgerRows(prefix + "acc")).isEqualTo(1);
        }
    }

    @Test
    void inProgressSignalsCutOff_redeliveredWhileFirstWorks_unguardedDebitsTwice_leaseGuardOnce() throws Exception {
        for (Debits mode : List.of(Debits.UNGUARDED, Debits.LEASE)) {
            Run run = concurrentRedelivery(mode);
            assertThat(run.secondCopyOutcomes)
                    .as(mode + ": the second consumer got the message")
                    .isNotEmpty();
            if (mode == Debits.UNGUARDED) {
                assertThat(run.maxInFlight).as("two handlers at once").isEqualTo(2);
                assertThat(run.ledgerRows).isEqualTo(2);
            } else {
                assertThat(run.maxInFlight).isEqualTo(1);
                assertThat(run.secondCopyOutcomes)
                        .startsWith(Outcome.Type.IN_PROGRESS)
                        .endsWith(Outcome.Type.DUPLICATE);
                assertThat(run.ledgerRows).isEqualTo(1);
            }
        }
    }

    private record Run(long ledgerRows, int maxInFlight, List<Outcome.Type> secondCopyOutcomes) {}

    /**
     * Consumer A's link is cut while its handler works; AckWait redelivers the message to consumer B, and A's handler
     * goes on only once B's handling of the copy returned.
     */
    private static Run concurrentRedelivery(Debits mode) throws Exception {
        String name = mode.name().toLowerCase(Locale.ROOT);
        URI server = URI.create(NatsFixture.url());
        try (NatsFixture.Streams streams = new NatsFixture.Streams(nats, "cut" + name);
                TcpProxy proxy = TcpProxy.start(server.getHost(), server.getPort());
                Connection viaProxy = NatsFixture.connectNoticingDeadLink("nats://127.0.0.1:" + proxy.port())) {
            String durable = streams.durable(name, ACK_WAIT, -1);
            String prefix = streams.prefix;
            bank.open(prefix + "acc", 1000);
            AtomicInteger inFlight = new AtomicInteger();
            AtomicInteger maxInFlight = new AtomicInteger();
            AtomicBoolean firstCopy = new AtomicBoolean(true);
            CountDownLatch firstCopyHeld = new CountDownLatch(1);
            CountDownLatch secondCopyHandled = new CountDownLatch(1);
            MessageHandler effect = mode.handler(bank, durable, prefix, message -> {
                maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
                try {
                    if (firstCopy.getAndSet(false)) {
                        NatsFixture.cutOff(proxy);
                        firstCopyHeld.countDown();
                        if (!secondCopyHandled.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                            throw new AssertionError("the message was not redelivered to the second consumer");
                        }
                    }
                } finally {
                    inFlight.decrementAndGet();
                }
            });
            List<Outcome.Type> secondCopyOutcomes = new CopyOnWriteArrayList<>();
            CompletableFuture<Void> firstDone = new CompletableFuture<>();
            try (IdempotentNatsConsumer a = consumer(streams, durable, viaProxy, (key, message) -> {
                try {
                    return effect.handle(key, message);
                } finally {
                    firstDone.complete(null);
                }
            })) {
                nats.jetStream().publish(NatsProducers.message(streams.subject("pay"), "pay-3", bytes("acc:100")));
                // B starts only once A holds the first copy: started together, B could take the first copy itself.
                assertThat(firstCopyHeld.await(WAIT.toSeconds(), TimeUnit.SECONDS))
                        .as("consumer A got the message")
                        .isTrue();
                try (IdempotentNatsConsumer b = consumer(streams, durable, nats, (key, message) -> {
                    Outcome outcome = effect.handle(key, message);
                    secondCopyOutcomes.add(outcome.type());
                    secondCopyHandled.countDown();
                    return outcome;
                })) {
                    firstDone.get(WAIT.toSeconds(), TimeUnit.SECONDS);
                    a.close();
                    streams.awaitDone(durable);
                }
            }
            return new Run(bank.ledgerRows(prefix + "acc"), maxInFlight.get(), secondCopyOutcomes);
        }
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
                .fetchWait(Duration.ofMillis(500))
                .shutdownTimeout(WAIT)
                .build()
                .start();
    }

    private static JetStreamSubscription bind(Connection connection, NatsFixture.Streams streams, String durable)
            throws Exception {
        return connection.jetStream().subscribe(null, PullSubscribeOptions.bind(streams.name, durable));
    }

    /** The slow handler's work: busy for {@code duration} (this is the scenario, not a wait for an event). */
    private static void workFor(Duration duration) throws InterruptedException {
        Thread.sleep(duration.toMillis());
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
