package com.example.payments;

import dev.idem.DeadLetterException;
import dev.idem.spring.Idempotent;
import java.nio.charset.StandardCharsets;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/**
 * Debits an account once per payment. The AMQP {@code message-id} is the payment id (fixed by the producer before the
 * first publish); the body is {@code <account>:<amount in cents>}. The dedup mark is written in this method's
 * transaction: the debit and the mark commit together, or neither does. The namespace is {@code idem.namespace}
 * (see application.properties).
 */
@Component
public class PaymentListener {
    private final JdbcTemplate jdbc;

    public PaymentListener(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @RabbitListener(queues = "${payments.queue}")
    @Transactional
    @Idempotent(key = "#message.messageProperties.messageId", fingerprint = "#message.body")
    public void onPayment(Message message) {
        String paymentId = message.getMessageProperties().getMessageId();
        String[] parts = new String(message.getBody(), StandardCharsets.UTF_8).split(":", 2);
        if (parts.length != 2 || !parts[1].matches("[0-9]{1,15}")) {
            // REJECTED: dead-lettered to <queue>.dlq at once with this reason, never marked done
            throw new DeadLetterException("payment " + paymentId + " is not <account>:<cents>", null);
        }
        long cents = Long.parseLong(parts[1]);
        if (jdbc.update("UPDATE account SET balance_cents = balance_cents - ? WHERE id = ?", cents, parts[0]) != 1) {
            throw new DeadLetterException("payment " + paymentId + ": no account " + parts[0], null);
        }
        jdbc.update(
                "INSERT INTO payment (payment_id, account_id, amount_cents) VALUES (?, ?, ?)",
                paymentId,
                parts[0],
                cents);
    }
}
