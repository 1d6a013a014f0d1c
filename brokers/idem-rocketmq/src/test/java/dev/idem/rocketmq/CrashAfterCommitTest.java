package dev.idem.rocketmq;

import static dev.idem.rocketmq.RocketMQFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.testsupport.PaymentBank;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Cause 3: the consumer stops after the database commit and before its offset is persisted. The first consumer's
 * listener debits (committed) and then hangs, deaf to interrupts, as a process does that is being killed; {@code
 * shutdown()} persists the offset of the unfinished message, and the next consumer of the group gets it again.
 */
class CrashAfterCommitTest {
    static PaymentBank bank;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("CrashAfterCommitTest");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    @Test
    void stoppedAfterCommitBeforeOffset_unguardedRedeliveryDebitsAgain() throws Exception {
        assertThat(run("crashplain", false)).isGreaterThanOrEqualTo(2);
    }

    @Test
    void stoppedAfterCommitBeforeOffset_inboxAnswersTheRedeliveryAsDuplicate_oneDebit() throws Exception {
        assertThat(run("crashinbox", true)).isEqualTo(1);
    }

    /** Runs the scenario and returns the ledger rows of its account. */
    private static long run(String name, boolean guarded) throws Exception {
        String topic = RocketMQFixture.topic(name, 1);
        String group = topic + "-g";
        bank.open(topic, 1000);
        CountDownLatch committed = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        DefaultMQPushConsumer first = RocketMQFixture.consumer(group, topic, group + "-1");
        Debits firstDebits = new Debits(bank);
        first.registerMessageListener(hangAfter(listener(firstDebits, first, guarded), committed, release));
        first.setAwaitTerminationMillisWhenShutdown(1); // killed: shutdown() does not wait for the hung listener
        DefaultMQPushConsumer second = RocketMQFixture.consumer(group, topic, group + "-2");
        Debits secondDebits = new Debits(bank);
        second.registerMessageListener(listener(secondDebits, second, guarded));
        DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
        try {
            RocketMQFixture.start(first);
            RocketMQFixture.send(producer, topic, "order-9:PAY", topic + ":100");
            assertThat(committed.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            assertThat(bank.ledgerRows(topic)).isEqualTo(1);
            first.shutdown();
            assertThat(RocketMQFixture.broker().committedOffset(group, topic, 0))
                    .as("the offset persisted at shutdown is the unfinished message's")
                    .isZero();
            RocketMQFixture.start(second);
            await().atMost(WAIT).until(() -> !secondDebits.deliveries.isEmpty());
            RocketMQFixture.awaitAllConsumed(second, topic, 1);
        } finally {
            release.countDown();
            second.shutdown();
            producer.shutdown();
        }
        return bank.ledgerRows(topic);
    }

    private static MessageListenerConcurrently listener(
            Debits debits, DefaultMQPushConsumer consumer, boolean guarded) {
        return guarded ? debits.guarded(consumer, KeyExtractor.keys()) : debits.unguarded();
    }

    /** Runs {@code listener}, then hangs until {@code release}, ignoring interrupts. */
    private static MessageListenerConcurrently hangAfter(
            MessageListenerConcurrently listener, CountDownLatch committed, CountDownLatch release) {
        return (messages, context) -> {
            ConsumeConcurrentlyStatus status = listener.consumeMessage(messages, context);
            committed.countDown();
            boolean interrupted = false;
            while (true) {
                try {
                    if (release.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                        break;
                    }
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
            return status;
        };
    }
}
