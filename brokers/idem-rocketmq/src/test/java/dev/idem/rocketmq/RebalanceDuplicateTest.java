package dev.idem.rocketmq;

import static dev.idem.rocketmq.RocketMQFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import dev.idem.testsupport.PaymentBank;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Cause 2: a second consumer joins the group while the first is still handling a message. The rebalance hands the
 * queue to the newcomer (client ids sort "a-..." before "z-..."), which reads from the last committed offset and
 * handles the same message at the same time. The guard is a lease in a store both consumers share.
 */
class RebalanceDuplicateTest {
    static PaymentBank bank;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("RebalanceDuplicateTest");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    @Test
    void consumerJoinsWhileMessageIsHandled_unguardedBothDebit() throws Exception {
        String topic = RocketMQFixture.topic("rebalplain", 1);
        String group = topic + "-g";
        bank.open(topic, 1000);
        CountDownLatch firstHolds = new CountDownLatch(1);
        CountDownLatch secondArrived = new CountDownLatch(1);
        DefaultMQPushConsumer first = RocketMQFixture.consumer(group, topic, "z-" + group);
        first.registerMessageListener(plain(() -> {
            firstHolds.countDown();
            awaitLatch(secondArrived, "the second consumer never received the message");
        }));
        DefaultMQPushConsumer second = RocketMQFixture.consumer(group, topic, "a-" + group);
        second.registerMessageListener(plain(secondArrived::countDown));
        runScenario(topic, first, second, firstHolds, secondArrived, () -> bank.ledgerRows(topic) >= 2);
        assertThat(bank.ledgerRows(topic))
                .as("both consumers debited the one message")
                .isGreaterThanOrEqualTo(2);
    }

    @Test
    void consumerJoinsWhileMessageIsHandled_guardedCopyIsInProgress_thenDuplicate_oneDebit() throws Exception {
        String topic = RocketMQFixture.topic("rebalguard", 1);
        String group = topic + "-g";
        bank.open(topic, 1000);
        CountDownLatch firstHolds = new CountDownLatch(1);
        CountDownLatch secondMetClaim = new CountDownLatch(1);
        List<String> secondSaw = new CopyOnWriteArrayList<>();
        try (Guard guard = Guard.of(InMemoryStore.create(), "rebalance")) {
            DefaultMQPushConsumer first = RocketMQFixture.consumer(group, topic, "z-" + group);
            first.registerMessageListener(RocketMQFixture.idem(first)
                    .keyFrom(KeyExtractor.keys())
                    .handler((key, message) -> guard.run(key, () -> {
                        firstHolds.countDown();
                        awaitLatch(secondMetClaim, "the second consumer never met the claim");
                        bank.debit(topic, 100, key);
                    }))
                    .build()
                    .concurrently());
            DefaultMQPushConsumer second = RocketMQFixture.consumer(group, topic, "a-" + group);
            second.registerMessageListener(RocketMQFixture.idem(second)
                    .keyFrom(KeyExtractor.keys())
                    .handler((key, message) -> {
                        Outcome outcome = guard.run(key, () -> bank.debit(topic, 100, key));
                        secondSaw.add(outcome.type() + "@" + message.getReconsumeTimes());
                        if (outcome.type() == Outcome.Type.IN_PROGRESS) {
                            secondMetClaim.countDown();
                        }
                        return outcome;
                    })
                    .build()
                    .concurrently());
            runScenario(topic, first, second, firstHolds, secondMetClaim, () -> secondSaw.size() > 1);
        }
        assertThat(bank.ledgerRows(topic)).isEqualTo(1);
        assertThat(secondSaw)
                .as("in progress, retried without counting an attempt, then a duplicate")
                .startsWith("IN_PROGRESS@0")
                .endsWith("DUPLICATE@0");
    }

    /**
     * Starts {@code first}, sends one message, starts {@code second} once {@code first} holds it, and waits until
     * {@code second} arrived and the scenario is {@code finished}.
     */
    private static void runScenario(
            String topic,
            DefaultMQPushConsumer first,
            DefaultMQPushConsumer second,
            CountDownLatch firstHolds,
            CountDownLatch secondArrived,
            BooleanSupplier finished)
            throws InterruptedException {
        DefaultMQProducer producer = RocketMQFixture.producer(topic + "-p");
        try {
            RocketMQFixture.start(first);
            RocketMQFixture.send(producer, topic, "order-7:PAY", topic + ":100");
            assertThat(firstHolds.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            RocketMQFixture.start(second);
            assertThat(secondArrived.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            await().atMost(WAIT).until(finished::getAsBoolean);
            RocketMQFixture.awaitAllConsumed(second, topic, 1);
        } finally {
            second.shutdown();
            first.shutdown();
            producer.shutdown();
        }
    }

    private static MessageListenerConcurrently plain(Runnable beforeDebit) {
        return (messages, context) -> {
            for (MessageExt message : messages) {
                beforeDebit.run();
                String[] debit = RocketMQFixture.body(message).split(":");
                try {
                    bank.debit(debit[0], Long.parseLong(debit[1]), message.getKeys());
                } catch (Exception e) {
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        };
    }

    private static void awaitLatch(CountDownLatch latch, String failure) {
        try {
            if (!latch.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                throw new AssertionError(failure);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(failure, e);
        }
    }
}
