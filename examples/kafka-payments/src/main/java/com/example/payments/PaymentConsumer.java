package com.example.payments;

import dev.idem.DeadLetterException;
import dev.idem.Delivery;
import dev.idem.Fingerprint;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.kafka.IdempotentKafkaConsumer;
import dev.idem.kafka.KeyExtractor;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Map;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * Debits an account once per payment, however often Kafka delivers it. The record key is the payment id (fixed by
 * the producer before the first send), the value {@code <account>:<amount in cents>}. The debit and the dedup mark
 * are written on the connection the inbox hands the handler, in one transaction: both commit, or neither does.
 */
public final class PaymentConsumer {
    private PaymentConsumer() {}

    /**
     * Starts consuming {@code topic} as group {@code group}; the dead-letter topic {@code <topic>-dlt} must exist.
     *
     * @param pool a connection pool with at least {@code WORKERS} connections (each worker holds one per record)
     */
    public static IdempotentKafkaConsumer<String, String> start(
            String bootstrapServers, String topic, String group, DataSource pool) {
        JdbcInbox inbox = JdbcInbox.builder(pool)
                .namespace(group) // the consumer group: another group's marks never answer for this one
                .createTableIfMissing(true) // or create idem_keys with your migrations (docs/jdbc.md)
                .build();
        return IdempotentKafkaConsumer.builder(Map.of(
                        "bootstrap.servers", bootstrapServers,
                        "group.id", group,
                        "auto.offset.reset", "earliest"))
                .topics(topic) // dead letters go to <topic>-dlt, checked at start()
                .keyFrom(KeyExtractor.recordKey()) // the payment id
                .handler((key, record) -> inbox.handle(
                        Delivery.of(key, Fingerprint.of(record.value())), // same id, other amount: REJECTED
                        connection -> debit(connection, record)))
                .workers(WORKERS) // partitions in parallel, order kept within each
                .build()
                .start();
    }

    /** Worker threads; the pool needs at least this many connections. */
    public static final int WORKERS = 4;

    private static Outcome debit(Connection connection, ConsumerRecord<String, String> record) throws SQLException {
        String[] parts = record.value().split(":", 2);
        if (parts.length != 2 || !parts[1].matches("[0-9]{1,15}")) {
            // REJECTED: dead-lettered at once with this reason, never marked done
            throw new DeadLetterException("payment " + record.key() + " is not <account>:<cents>", null);
        }
        long cents = Long.parseLong(parts[1]);
        try (PreparedStatement update =
                connection.prepareStatement("UPDATE account SET balance_cents = balance_cents - ? WHERE id = ?")) {
            update.setLong(1, cents);
            update.setString(2, parts[0]);
            if (update.executeUpdate() != 1) {
                throw new DeadLetterException("payment " + record.key() + ": no account " + parts[0], null);
            }
        }
        try (PreparedStatement insert = connection.prepareStatement(
                "INSERT INTO payment (payment_id, account_id, amount_cents) VALUES (?, ?, ?)")) {
            insert.setString(1, record.key());
            insert.setString(2, parts[0]);
            insert.setLong(3, cents);
            insert.executeUpdate();
        }
        return Outcome.processed(); // commits the debit, the payment row and the mark together
    }
}
