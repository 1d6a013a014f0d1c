package com.example.payments;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.zaxxer.hikari.HikariDataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.Message;
import org.junit.jupiter.api.Test;

/**
 * Sends every payment twice (a producer resend), then one payment id again with another amount and one unreadable
 * payment, to a real RocketMQ broker in this JVM; the consumer debits each payment once on a database of its own on
 * your PostgreSQL and dead-letters the other two with their reason. Counted by SQL.
 */
class PaymentConsumerTest {
    private static final int PAYMENTS = 20;

    @Test
    void everyPaymentDebitedOnce_resendsIgnored_badOnesDeadLettered() throws Exception {
        InProcessRocketMQ rocketmq = new InProcessRocketMQ();
        try (PrivateDatabase database = new PrivateDatabase();
                HikariDataSource pool = PaymentsApplication.pool(database.url())) {
            PaymentsApplication.createSchema(pool);
            execute(pool, "INSERT INTO account (id, balance_cents) VALUES ('alice', 100000)");
            rocketmq.createTopic("payments", 4);
            rocketmq.createGroupTopics("payments");

            DefaultMQProducer producer = new DefaultMQProducer("payments-producer");
            producer.setNamesrvAddr(rocketmq.nameServer());
            producer.start();
            DefaultMQPushConsumer consumer = PaymentConsumer.start(rocketmq.nameServer(), "payments", "payments", pool);
            try {
                for (int i = 1; i <= PAYMENTS; i++) {
                    Message payment = payment("payment-" + i, "alice:" + i * 100);
                    producer.send(payment);
                    producer.send(payment); // the same payment id: a resend
                }
                await().atMost(Duration.ofSeconds(60))
                        .until(() -> count(pool, "SELECT count(*) FROM payment") == PAYMENTS);
                // Sent once the payments are applied: RocketMQ keeps no order across queues, and a concurrent
                // consumer none within one, so sent together the reused id could be applied first and the original
                // rejected.
                producer.send(payment("payment-1", "alice:999")); // the id reused with another amount: REJECTED
                producer.send(payment("payment-x", "not a payment")); // REJECTED
                await().atMost(Duration.ofSeconds(60))
                        .until(() -> rocketmq.messages(MixAll.getDLQTopic("payments")) == 2);
            } finally {
                producer.shutdown();
                consumer.shutdown(); // lets handlers in flight finish, then stores the consumed offsets
            }

            assertTrue(rocketmq.consumedToTheEnd("payments", "payments"), "every copy was consumed");
            assertEquals(PAYMENTS, count(pool, "SELECT count(*) FROM payment"));
            assertEquals(PAYMENTS, count(pool, "SELECT count(DISTINCT payment_id) FROM payment"));
            long debited = 100L * PAYMENTS * (PAYMENTS + 1) / 2;
            assertEquals(100000 - debited, count(pool, "SELECT balance_cents FROM account WHERE id = 'alice'"));
        }
    }

    /** A payment whose KEYS, the idempotency key, is the payment id: fixed before the first send. */
    private static Message payment(String paymentId, String body) {
        Message message = new Message("payments", body.getBytes(StandardCharsets.UTF_8));
        message.setKeys(paymentId);
        return message;
    }

    private static long count(HikariDataSource pool, String sql) throws SQLException {
        try (Connection connection = pool.getConnection();
                Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery(sql)) {
            rows.next();
            return rows.getLong(1);
        }
    }

    private static void execute(HikariDataSource pool, String sql) throws SQLException {
        try (Connection connection = pool.getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute(sql);
        }
    }
}
