package dev.idem.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.jdbc.JdbcInbox;
import dev.idem.testsupport.ChildJvm;
import dev.idem.testsupport.KillNineStorm;
import dev.idem.testsupport.PaymentBank;
import io.nats.client.Connection;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The crash proof: three consumer JVMs on one durable pull consumer ({@link KillNineConsumer}: {@code JdbcInbox} in the
 * handler, on PostgreSQL), SIGKILLed at random moments (half of them while a debit's transaction is open) and
 * restarted, while a producer publishes payments, a share of them twice at once (two stored copies, fetched by two
 * consumers) and a share again seconds later. Then the SQL verdict: no payment debited twice, none lost, nothing
 * dead-lettered.
 */
class KillNineTest {
    private static final int PAYMENTS = 400;
    private static final int KILLS = 6;
    private static final int CONSUMERS = 3;
    /** How long the producer spreads the payments over. */
    private static final Duration PRODUCING = Duration.ofSeconds(12);
    /** Redelivery after a kill: short, so the drain is quick. */
    private static final Duration ACK_WAIT = Duration.ofSeconds(2);
    /** The children's stderr, for a failing run. */
    private static final Path LOG = Path.of("target", "kill9-children.log");

    static PaymentBank bank;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("NatsKillNineTest");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    @Test
    void consumersKilledAtRandom_whileCopiesArrive_noPaymentDoubled_noneLost() throws Exception {
        try (Connection nats = NatsFixture.connect();
                NatsFixture.Streams streams = new NatsFixture.Streams(nats, "kill9")) {
            String durable = streams.durable(
                    "payments",
                    ConsumerConfiguration.builder().ackWait(ACK_WAIT).build());
            String account = streams.prefix + "-acc";
            bank.open(account, 1_000_000);
            JdbcInbox.builder(bank.database().dataSource())
                    .namespace(streams.prefix)
                    .createTableIfMissing(true)
                    .build();
            try (KillNineStorm storm = KillNineStorm.start(CONSUMERS, () -> child(streams, durable))) {
                Thread producer = new Thread(() -> produce(nats, streams, account), "kill9-producer");
                producer.start();
                await().atMost(Duration.ofSeconds(60)).until(() -> bank.ledgerRows(account) > 0);
                storm.strike(KILLS, Duration.ofSeconds(5), Duration.ofMillis(1500));
                producer.join(Duration.ofSeconds(60).toMillis());
                assertThat(producer.isAlive()).isFalse();
                await().atMost(Duration.ofSeconds(90))
                        .pollInterval(Duration.ofSeconds(1))
                        .until(() -> bank.ledgerRows(account) >= PAYMENTS);
                streams.awaitDone(durable);
                storm.report("NATS, " + streams.stored() + " stored messages", PAYMENTS);
            }
            KillNineStorm.assertEachDebitedOnce(bank, account, 1_000_000, PAYMENTS);
            assertThat(streams.deadLetters()).isEmpty();
        }
    }

    /**
     * Payments {@code pay-i} over {@link #PRODUCING}, keyed by {@value KillNineConsumer#KEY_HEADER} (no {@code
     * Nats-Msg-Id}, so the server stores every copy): every 7th published twice at once, every 11th again about two
     * seconds later.
     */
    private static void produce(Connection nats, NatsFixture.Streams streams, String account) {
        long pause = PRODUCING.toNanos() / PAYMENTS;
        List<Integer> resend = new ArrayList<>();
        try {
            for (int i = 0; i < PAYMENTS; i++) {
                publish(nats, streams, i, account);
                if (i % 7 == 0) {
                    publish(nats, streams, i, account);
                }
                if (i % 11 == 0) {
                    resend.add(i);
                }
                int due = i - (int) (Duration.ofSeconds(2).toNanos() / pause);
                while (!resend.isEmpty() && resend.get(0) <= due) {
                    publish(nats, streams, resend.remove(0), account);
                }
                java.util.concurrent.locks.LockSupport.parkNanos(pause);
            }
            for (int old : resend) {
                publish(nats, streams, old, account);
            }
        } catch (Exception e) {
            throw new IllegalStateException("the producer failed", e);
        }
    }

    private static void publish(Connection nats, NatsFixture.Streams streams, int payment, String account)
            throws Exception {
        nats.jetStream()
                .publish(NatsMessage.builder()
                        .subject(streams.subject("pay"))
                        .headers(new Headers().put(KillNineConsumer.KEY_HEADER, "pay-" + payment))
                        .data((account + ":1").getBytes(StandardCharsets.UTF_8))
                        .build());
    }

    private static ChildJvm child(NatsFixture.Streams streams, String durable) throws Exception {
        return ChildJvm.start(
                KillNineConsumer.class,
                LOG,
                NatsFixture.url(),
                streams.name,
                durable,
                streams.deadLetterSubject,
                bank.database().url(),
                streams.prefix);
    }
}
