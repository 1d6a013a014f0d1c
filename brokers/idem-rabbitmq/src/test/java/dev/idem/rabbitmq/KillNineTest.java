package dev.idem.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.jdbc.JdbcInbox;
import dev.idem.testsupport.ChildJvm;
import dev.idem.testsupport.KillNineStorm;
import dev.idem.testsupport.PaymentBank;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The kill -9 proof for RabbitMQ: three consumer JVMs on one quorum work queue ({@link KillNineConsumer}: {@code
 * JdbcInbox} + {@link IdempotentRabbitConsumer} on PostgreSQL), SIGKILLed at random moments (half of them while a
 * debit's transaction is open) and restarted, while a producer sends payments, sends some twice at the same instant
 * (two consumers get them at once) and resends others a second later; every fifth payment fails once and goes round
 * the retry queue. Then the SQL verdict: no payment debited twice, none lost, nothing dead-lettered, no queue holding
 * anything.
 */
class KillNineTest {
    private static final int PAYMENTS = 600;
    private static final int KILLS = 6;
    private static final int CONSUMERS = 3;
    /** How long the producer spreads the payments over. */
    private static final Duration PRODUCING = Duration.ofSeconds(12);
    /** The drain fails when no payment was debited and no queue shrank for this long. */
    private static final Duration STALL = Duration.ofSeconds(60);
    /** The drain's outer bound while payments still move. */
    private static final Duration DRAIN_CAP = Duration.ofMinutes(8);
    /** The children's stderr, for a failing run. */
    private static final Path LOG = Path.of("target", "kill9-children.log");

    static PaymentBank bank;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("RabbitKillNineTest");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    @Test
    void consumersKilledAtRandom_whileCopiesArrive_noPaymentDoubled_noneLost() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("kill9")) {
            String queue = queues.queue();
            String account = queue + "-acc";
            bank.open(account, 1_000_000);
            JdbcInbox.builder(bank.database().dataSource())
                    .namespace(queue)
                    .createTableIfMissing(true)
                    .build();
            Set<String> sent = ConcurrentHashMap.newKeySet();
            try (KillNineStorm storm = KillNineStorm.start(CONSUMERS, () -> child(queue))) {
                Thread producer = new Thread(() -> produce(queue, account, sent), "kill9-producer");
                producer.start();
                await().atMost(Duration.ofSeconds(90)).until(() -> bank.ledgerRows(account) > 0);
                storm.strike(KILLS, Duration.ofSeconds(5), Duration.ofMillis(1500));
                producer.join(Duration.ofSeconds(60).toMillis());
                assertThat(producer.isAlive()).isFalse();
                awaitDrained(queues, account, sent.size());
                storm.report("RabbitMQ", sent.size());
            }
            KillNineStorm.assertEachDebitedOnce(bank, account, 1_000_000, PAYMENTS);
            assertThat(queues.depth(queues.topology.deadLetterQueue())).isZero();
            assertThat(queues.depth(queue)).isZero();
            assertThat(queues.depth(queues.topology.retryQueue())).isZero();
        }
    }

    /**
     * Payments {@code pay-i} over {@link #PRODUCING}: every 7th published twice at once (two consumers may take the
     * copies at the same moment), every 11th published again about a second later.
     */
    private static void produce(String queue, String account, Set<String> sent) {
        long pause = PRODUCING.toNanos() / PAYMENTS;
        int resendLag = (int) (Duration.ofSeconds(1).toNanos() / pause);
        byte[] body = (account + ":1").getBytes(StandardCharsets.UTF_8);
        try (RabbitPublisher publisher =
                RabbitPublisher.builder(RabbitFixture.factory(0)).build()) {
            for (int i = 0; i < PAYMENTS; i++) {
                String key = "pay-" + i;
                publisher.publish("", queue, key, body);
                if (i % 7 == 0) {
                    publisher.publish("", queue, key, body);
                }
                if (i >= resendLag && (i - resendLag) % 11 == 0) {
                    publisher.publish("", queue, "pay-" + (i - resendLag), body);
                }
                sent.add(key);
                LockSupport.parkNanos(pause);
            }
        }
    }

    /**
     * Waits until every payment is debited and no queue holds anything; it fails when nothing moved for {@link #STALL}.
     */
    private static void awaitDrained(RabbitFixture.Queues queues, String account, int payments) throws Exception {
        KillNineStorm.awaitDrained(
                STALL,
                DRAIN_CAP,
                Duration.ofMillis(500),
                () -> Math.max(0, payments - bank.ledgerRows(account))
                        + queues.depth(queues.queue())
                        + queues.depth(queues.topology.retryQueue()),
                () -> bank.ledgerRows(account) + " of " + payments + " debited, " + queues.depth(queues.queue())
                        + " ready, " + queues.depth(queues.topology.retryQueue())
                        + " in the retry queue; children's stderr in " + LOG.toAbsolutePath());
    }

    private static ChildJvm child(String queue) throws Exception {
        return ChildJvm.start(
                KillNineConsumer.class,
                LOG,
                RabbitFixture.uri().toString(),
                queue,
                bank.database().url(),
                queue);
    }
}
