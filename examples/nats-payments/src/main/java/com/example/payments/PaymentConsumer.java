package com.example.payments;

import dev.idem.DeadLetterException;
import dev.idem.Delivery;
import dev.idem.Fingerprint;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.nats.IdempotentNatsConsumer;
import dev.idem.nats.KeyExtractor;
import io.nats.client.Connection;
import io.nats.client.Message;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * Debits an account once per payment, however often JetStream delivers it. The header {@value #PAYMENT_ID} carries
 * the payment id (fixed by the producer before the first publish), the data {@code <account>:<amount in cents>}. The
 * debit and the dedup mark are written on the connection the inbox hands the handler, in one transaction.
 */
public final class PaymentConsumer {
    /** The header holding the payment id: the idempotency key. */
    public static final String PAYMENT_ID = "Payment-Id";

    /** Worker threads; the pool needs at least this many connections. */
    public static final int WORKERS = 4;

    private PaymentConsumer() {}

    /**
     * Starts the durable pull consumer {@code durable} of {@code stream}; REJECTED payments go to {@code deadLetters}.
     *
     * @param pool a connection pool with at least {@link #WORKERS} connections
     */
    public static IdempotentNatsConsumer start(
            Connection nats, String stream, String durable, String deadLetters, DataSource pool) throws IOException {
        JdbcInbox inbox = JdbcInbox.builder(pool)
                .namespace(durable) // the durable consumer: JetStream's equivalent of a consumer group
                .createTableIfMissing(true) // or create idem_keys with your migrations (docs/jdbc.md)
                .build();
        return IdempotentNatsConsumer.builder(nats)
                .consumer(stream, durable)
                .deadLetterSubject(deadLetters) // REJECTED messages go there with the reason
                .keyFrom(KeyExtractor.header(PAYMENT_ID))
                .handler((key, message) -> inbox.handle(
                        Delivery.of(key, Fingerprint.of(message.getData())), // same id, other amount: REJECTED
                        connection -> debit(connection, key, message)))
                .workers(WORKERS)
                .build()
                .start();
    }

    private static Outcome debit(java.sql.Connection connection, String paymentId, Message message)
            throws SQLException {
        String[] parts = new String(message.getData(), StandardCharsets.UTF_8).split(":", 2);
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
