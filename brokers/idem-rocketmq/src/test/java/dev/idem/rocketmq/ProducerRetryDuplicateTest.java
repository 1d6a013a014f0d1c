package dev.idem.rocketmq;

import static dev.idem.rocketmq.RocketMQFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.testsupport.PaymentBank;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Cause 1: the producer's answer is lost. RocketMQ's client retries by itself (same {@code Message} object, same
 * msgId) and the broker stores both copies; an application that resends with a new {@code Message} object stores a
 * copy with a new msgId. Each copy is consumed by a plain listener and by a guarded one (JDBC inbox on PostgreSQL).
 */
class ProducerRetryDuplicateTest {
    static PaymentBank bank;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("ProducerRetryDuplicateTest");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    @Test
    void lostSendResponse_clientRetryStoresTwoCopiesWithOneMsgId_unguardedDebitsTwice_guardedOnce() throws Exception {
        String topic = RocketMQFixture.topic("lostack", 1);
        DefaultMQProducer producer = RocketMQFixture.producer(topic + "-p");
        producer.setSendMsgMaxTimeoutPerRequest(1000);
        try {
            RocketMQFixture.send(producer, RocketMQFixture.topic("warmup", 1), "warm-up", "warmup:0");
            RocketMQFixture.broker().proxy().blackholeExisting();
            Message debit = new Message(topic, "lostack-a:100".getBytes(StandardCharsets.UTF_8));
            debit.setKeys("order-1:PAY");
            RocketMQFixture.send(producer, debit);
        } finally {
            producer.shutdown();
        }
        List<MessageExt> stored = RocketMQFixture.broker().messages(topic);
        assertThat(stored)
                .as("the first attempt was stored, its answer lost, and the client retried")
                .hasSize(2);
        assertThat(MessageClientIDSetter.getUniqID(stored.get(0)))
                .as("both copies carry the same msgId (UNIQ_KEY)")
                .isEqualTo(MessageClientIDSetter.getUniqID(stored.get(1)));

        assertThat(consume(topic, "unguarded", null, "lostack-a", 2)).isEqualTo(2);
        assertThat(consume(topic, "guarded", KeyExtractor.uniqueKey(), "lostack-b", 2))
                .isEqualTo(1);
    }

    @Test
    void applicationResend_newMessageObjectGetsANewMsgId_onlyTheBusinessKeyRecognisesIt() {
        String topic = RocketMQFixture.topic("resend", 1);
        DefaultMQProducer producer = RocketMQFixture.producer(topic + "-p");
        String first;
        String second;
        try {
            first = RocketMQFixture.send(producer, topic, "order-2:PAY", "resend:100")
                    .getMsgId();
            second = RocketMQFixture.send(producer, topic, "order-2:PAY", "resend:100")
                    .getMsgId();
        } finally {
            producer.shutdown();
        }
        assertThat(second).as("a new Message object gets a new UNIQ_KEY").isNotEqualTo(first);

        assertThat(consume(topic, "unguarded", null, "resend-a", 2)).isEqualTo(2);
        assertThat(consume(topic, "bymsgid", KeyExtractor.uniqueKey(), "resend-b", 2))
                .as("UNIQ_KEY is no key for an application resend")
                .isEqualTo(2);
        assertThat(consume(topic, "bykeys", KeyExtractor.keys(), "resend-c", 2)).isEqualTo(1);
    }

    /**
     * Consumes every copy in {@code topic} with a new group, debiting {@code account} (unguarded when {@code keys} is
     * null), and returns the ledger rows of {@code account}.
     */
    private static long consume(String topic, String mode, KeyExtractor keys, String account, int copies) {
        bank.open(account, 1000);
        String group = topic + "-" + mode;
        Debits debits = new Debits(bank);
        DefaultMQPushConsumer consumer = RocketMQFixture.consumer(group, topic, group);
        MessageListenerConcurrently listener = keys == null ? debits.unguarded() : debits.guarded(consumer, keys);
        consumer.registerMessageListener(rewrite(listener, account));
        try {
            RocketMQFixture.start(consumer);
            await().atMost(WAIT).until(() -> debits.deliveries.size() >= copies);
            RocketMQFixture.awaitAllConsumed(consumer, topic, 1);
        } finally {
            consumer.shutdown();
        }
        return bank.ledgerRows(account);
    }

    /** Points the copies' debit at this run's own account, so that each consumer's effects are counted apart. */
    private static MessageListenerConcurrently rewrite(MessageListenerConcurrently listener, String account) {
        return (messages, context) -> {
            for (MessageExt message : messages) {
                String amount = RocketMQFixture.body(message).split(":")[1];
                message.setBody((account + ":" + amount).getBytes(StandardCharsets.UTF_8));
            }
            return listener.consumeMessage(messages, context);
        };
    }
}
