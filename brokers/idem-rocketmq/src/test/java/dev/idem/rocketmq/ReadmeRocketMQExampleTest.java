package dev.idem.rocketmq;

import static dev.idem.rocketmq.RocketMQFixture.WAIT;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.Fingerprint;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.testsupport.PaymentBank;
import dev.idem.testsupport.ReadmeSnippets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/**
 * The examples of {@code docs/rocketmq.md}: they compile, run against the in-process broker and PostgreSQL (the inbox on
 * a pool: a payment sent twice is debited once), and the page shows them verbatim.
 */
class ReadmeRocketMQExampleTest {
    private static final Path SOURCE = Path.of("src/test/java/dev/idem/rocketmq/ReadmeRocketMQExampleTest.java");

    @Test
    void docsExample_aPaymentSentTwice_isDebitedOnce() throws Exception {
        String topic = RocketMQFixture.topic("docs", 1);
        String group = topic + "-payments";
        RocketMQFixture.broker().createGroupTopics(group);
        String nameServer = RocketMQFixture.broker().nameServer();
        try (PaymentBank bank = new PaymentBank("ReadmeRocketMQExampleTest")) {
            bank.open("alice", 100);
            String jdbcUrl = bank.database().url();
            JdbcInbox.builder(bank.database().dataSource())
                    .namespace("setup")
                    .createTableIfMissing(true)
                    .build();

            // readme:rocketmq begin
            HikariDataSource pool = new HikariDataSource(); // a pool: else a connection per message, half speed
            pool.setJdbcUrl(jdbcUrl); // e.g. jdbc:postgresql://127.0.0.1:5432/payments?user=app
            pool.setMaximumPoolSize(4); // one connection per consume thread (4 below)
            JdbcInbox inbox = JdbcInbox.builder(pool)
                    .namespace(group) // the consumer group: every process of the group shares these marks
                    .build();
            DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
            consumer.setNamesrvAddr(nameServer);
            consumer.setConsumeThreadMin(4);
            consumer.setConsumeThreadMax(4); // handlers in parallel, each holding a connection of the pool
            consumer.subscribe(topic, "*");
            IdempotentRocketMQ idem = IdempotentRocketMQ.builder(consumer)
                    .keyFrom(KeyExtractor.keys()) // the producer's business key, e.g. "10086:PAY"
                    .handler((key, message) -> inbox.handle(
                            Delivery.of(key, Fingerprint.of(message.getBody())), // same key, other body: REJECTED
                            connection -> debit(connection, key, message)))
                    .build();
            consumer.registerMessageListener(idem.concurrently()); // or idem.orderly(): in order per queue
            consumer.start(); // on shutdown: consumer.shutdown() (running handlers end first), then pool.close()
            // readme:rocketmq end

            DefaultMQProducer producer = RocketMQFixture.producer(group + "-p");
            try {
                RocketMQFixture.send(producer, topic, "10086:PAY", "alice:25");
                RocketMQFixture.send(producer, topic, "10086:PAY", "alice:25"); // a resend: a second stored copy
                await().atMost(WAIT).until(() -> RocketMQFixture.consumedAll(consumer, topic, 1));
            } finally {
                consumer.shutdown();
                producer.shutdown();
                pool.close();
            }
            assertThat(RocketMQFixture.broker().endOffset(topic, 0))
                    .as("two copies in the queue")
                    .isEqualTo(2);
            assertThat(RocketMQFixture.deadLetters(group)).isEmpty();
            assertThat(bank.balance("alice")).isEqualTo(75);
            assertThat(bank.ledgerRows("alice")).isEqualTo(1);
        }
        ReadmeSnippets.assertShown(SOURCE, "rocketmq");
        ReadmeSnippets.assertShown(SOURCE, "rocketmq-debit");
    }

    // readme:rocketmq-debit begin
    /** Body {@code <account>:<amount>}, debited on the inbox's connection: one transaction with the dedup mark. */
    private static Outcome debit(Connection connection, String key, MessageExt message) throws SQLException {
        String[] payment = new String(message.getBody(), UTF_8).split(":", 2);
        try (PreparedStatement debit =
                connection.prepareStatement("UPDATE account SET balance = balance - ? WHERE id = ?")) {
            debit.setLong(1, Long.parseLong(payment[1]));
            debit.setString(2, payment[0]);
            debit.executeUpdate();
        }
        try (PreparedStatement ledger =
                connection.prepareStatement("INSERT INTO ledger (account_id, message_key, amount) VALUES (?, ?, ?)")) {
            ledger.setString(1, payment[0]);
            ledger.setString(2, key);
            ledger.setLong(3, Long.parseLong(payment[1]));
            ledger.executeUpdate();
        }
        return Outcome.processed(); // PROCESSED/DUPLICATE commit; anything else rolls back
    }
    // readme:rocketmq-debit end

    @Test
    void docsProducer_recommendedSettings_businessKeyInKeysAndInTheKeyProperty() {
        String topic = "payments";
        String orderId = "10086";
        byte[] body = "alice:25".getBytes(UTF_8);
        // readme:rocketmq-producer begin
        DefaultMQProducer producer =
                RocketMQProducers.applyRecommendedSettings(new DefaultMQProducer("payments-producer"));
        Message message = new Message(topic, body);
        message.setKeys(orderId + ":PAY"); // the business key, read by KeyExtractor.keys(), or:
        RocketMQProducers.withKey(message, orderId + ":PAY"); // for KeyExtractor.property(KEY_PROPERTY)
        // readme:rocketmq-producer end
        assertThat(producer.getSendMsgMaxTimeoutPerRequest()).isEqualTo(3000);
        assertThat(producer.getRetryTimesWhenSendFailed()).isEqualTo(2);
        assertThat(message.getKeys()).isEqualTo("10086:PAY");
        assertThat(RocketMQProducers.key(message)).contains("10086:PAY");
        ReadmeSnippets.assertShown(SOURCE, "rocketmq-producer");
    }
}
