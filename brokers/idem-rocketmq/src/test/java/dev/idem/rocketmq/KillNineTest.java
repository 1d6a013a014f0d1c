package dev.idem.rocketmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.jdbc.JdbcInbox;
import dev.idem.testsupport.ChildJvm;
import dev.idem.testsupport.KillNineStorm;
import dev.idem.testsupport.PaymentBank;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.Message;
import org.junit.jupiter.api.Test;

/**
 * The proof under real crashes: three consumer JVMs in one group ({@link KillNineConsumer}: the guarded concurrent
 * listener + {@code JdbcInbox} on PostgreSQL), SIGKILLed at random moments (a share of them while a debit's
 * transaction is open) and restarted, while the test sends payments, some of them twice at the same instant and some
 * again seconds later as a new message. The broker runs in the test's JVM, so killing a consumer never kills it. Then
 * the SQL verdict: no payment debited twice, none lost, nothing dead-lettered.
 */
class KillNineTest {
    private static final int PAYMENTS = 300;
    private static final int KILLS = 6;
    private static final int QUEUES = 4;
    private static final Duration PRODUCING = Duration.ofSeconds(8);
    private static final Duration DRAIN = Duration.ofMinutes(3);
    /** The children's stderr, for a failing run. */
    private static final Path LOG = Path.of("target", "kill9-children.log");

    @Test
    void consumersKilledAtRandom_whileCopiesArrive_noPaymentDoubled_noneLost() throws Exception {
        String topic = RocketMQFixture.topic("kill9", QUEUES);
        String group = topic + "-g";
        String account = topic + "-acc";
        RocketMQFixture.broker().createGroupTopics(group);
        try (PaymentBank bank = new PaymentBank("RocketMQKillNineTest")) {
            bank.open(account, 1_000_000);
            JdbcInbox.builder(bank.database().dataSource())
                    .namespace(topic)
                    .createTableIfMissing(true)
                    .build();
            try (KillNineStorm storm = KillNineStorm.start(3, () -> child(topic, group, bank))) {
                Thread producer = new Thread(() -> produce(topic, account), "kill9-producer");
                producer.start();
                // The storm starts once the group is up and debiting, so that kills hit working consumers.
                await().atMost(Duration.ofSeconds(90)).until(() -> bank.ledgerRows(account) > 0);
                storm.strike(KILLS, Duration.ofSeconds(10), Duration.ofSeconds(2));
                producer.join(Duration.ofSeconds(60).toMillis());
                assertThat(producer.isAlive()).isFalse();
                await().atMost(DRAIN)
                        .pollInterval(Duration.ofSeconds(1))
                        .until(() -> bank.keysDebited(account) == PAYMENTS);
                await().atMost(DRAIN).pollInterval(Duration.ofSeconds(1)).until(() -> drained(group, topic));
                storm.report("RocketMQ", PAYMENTS);
            }
            KillNineStorm.assertEachDebitedOnce(bank, account, 1_000_000, PAYMENTS);
        }
        assertThat(RocketMQFixture.deadLetters(group)).isEmpty();
    }

    /**
     * Payments {@code pay-i} over {@link #PRODUCING}: every 7th sent twice at once (two queues, two consumers), every
     * 11th sent again about two seconds later as a new message (a new msgId, the same key).
     */
    private static void produce(String topic, String account) {
        DefaultMQProducer producer = RocketMQFixture.producer(topic + "-p");
        try {
            long pause = PRODUCING.toNanos() / PAYMENTS;
            List<Integer> resend = new ArrayList<>();
            for (int i = 0; i < PAYMENTS; i++) {
                RocketMQFixture.send(producer, payment(topic, account, i));
                if (i % 7 == 0) {
                    RocketMQFixture.send(producer, payment(topic, account, i));
                }
                if (i % 11 == 0) {
                    resend.add(i);
                }
                int due = i - (int) (Duration.ofSeconds(2).toNanos() / pause);
                while (!resend.isEmpty() && resend.get(0) <= due) {
                    RocketMQFixture.send(producer, payment(topic, account, resend.remove(0)));
                }
                java.util.concurrent.locks.LockSupport.parkNanos(pause);
            }
            for (int old : resend) {
                RocketMQFixture.send(producer, payment(topic, account, old));
            }
        } finally {
            producer.shutdown();
        }
    }

    private static Message payment(String topic, String account, int i) {
        Message message = new Message(topic, account.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        message.setKeys("pay-" + i);
        return message;
    }

    /** Every queue of the topic and the group's retry topic consumed to its end, as the broker holds the offsets. */
    private static boolean drained(String group, String topic) throws Exception {
        for (int q = 0; q < QUEUES; q++) {
            if (RocketMQFixture.broker().committedOffset(group, topic, q)
                    < RocketMQFixture.broker().endOffset(topic, q)) {
                return false;
            }
        }
        String retry = MixAll.getRetryTopic(group);
        return RocketMQFixture.broker().committedOffset(group, retry, 0)
                >= RocketMQFixture.broker().endOffset(retry, 0);
    }

    private static ChildJvm child(String topic, String group, PaymentBank bank) throws Exception {
        return ChildJvm.start(
                KillNineConsumer.class,
                LOG,
                RocketMQFixture.broker().nameServer(),
                topic,
                group,
                bank.database().url(),
                topic);
    }
}
