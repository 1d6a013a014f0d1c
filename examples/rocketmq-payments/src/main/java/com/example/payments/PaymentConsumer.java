package com.example.payments;

import dev.idem.DeadLetterException;
import dev.idem.Delivery;
import dev.idem.Fingerprint;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.rocketmq.IdempotentRocketMQ;
import dev.idem.rocketmq.KeyExtractor;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Debits an account once per payment, however often RocketMQ delivers it. The message's {@code KEYS} is the payment
 * id (fixed by the producer before the first send), the body {@code <account>:<amount in cents>}. The debit and the
 * dedup mark are written on the connection the inbox hands the handler, in one transaction.
 */
public final class PaymentConsumer {
    /** Consume threads; the pool needs at least this many connections. */
    public static final int THREADS = 4;

    private PaymentConsumer() {}

    /**
     * Starts a push consumer of {@code topic} in group {@code group}; REJECTED payments go to {@code %DLQ%<group>}.
     *
     * @param pool a connection pool with at least {@link #THREADS} connections
     */
    public static DefaultMQPushConsumer start(String nameServer, String topic, String group, DataSource pool)
            throws MQClientException {
        JdbcInbox inbox = JdbcInbox.builder(pool)
                .namespace(group) // the consumer group: another group's marks never answer for this one
                .createTableIfMissing(true) // or create idem_keys with your migrations (docs/jdbc.md)
                .build();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(nameServer);
        consumer.setConsumeThreadMin(THREADS);
        consumer.setConsumeThreadMax(THREADS);
        consumer.subscribe(topic, "*");
        IdempotentRocketMQ idem = IdempotentRocketMQ.builder(consumer)
                .keyFrom(KeyExtractor.keys()) // the payment id
                .handler((key, message) -> inbox.handle(
                        Delivery.of(key, Fingerprint.of(message.getBody())), // same id, other amount: REJECTED
                        connection -> debit(connection, key, message)))
                .build();
        consumer.registerMessageListener(idem.concurrently());
        consumer.start();
        return consumer;
    }

    private static Outcome debit(Connection connection, String paymentId, MessageExt message) throws SQLException {
        String[] parts = new String(message.getBody(), StandardCharsets.UTF_8).split(":", 2);
        if (parts.length != 2 || !parts[1].matches("[0-9]{1,15}")) {
            throw new DeadLetterException("payment " + paymentId + " is not <account>:<cents>", null);
        }
        long cents = Long.parseLong(parts[1]);
        try (PreparedStatement update =
                connection.prepareStatement("UPDATE account SET balance_cents = balance_cents - ? WHERE id = ?")) {
            update.setLong(1, cents);
            update.setString(2, parts[0]);
            if (update.executeUpdate() != 1) {
                throw new DeadLetterException("payment " + paymentId + ": no account " + parts[0], null);
            }
        }
        try (PreparedStatement insert = connection.prepareStatement(
                "INSERT INTO payment (payment_id, account_id, amount_cents) VALUES (?, ?, ?)")) {
            insert.setString(1, paymentId);
            insert.setString(2, parts[0]);
            insert.setLong(3, cents);
            insert.executeUpdate();
        }
        return Outcome.processed(); // commits the debit, the payment row and the mark together
    }
}
