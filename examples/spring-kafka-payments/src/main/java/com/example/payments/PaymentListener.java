package com.example.payments;

import dev.idem.DeadLetterException;
import dev.idem.spring.Idempotent;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/**
 * Debits an account once per payment. The record's key is the payment id (fixed by the producer before the first
 * send); the value is {@code <account>:<amount in cents>}. The dedup mark is written in this method's transaction:
 * the debit and the mark commit together, or neither does. The namespace is {@code idem.namespace} (the consumer
 * group, see application.properties).
 */
@Component
public class PaymentListener {
    private final JdbcTemplate jdbc;

    public PaymentListener(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @KafkaListener(topics = "${payments.topic}", concurrency = "${payments.concurrency}")
    @Transactional
    @Idempotent(key = "#record.key()", fingerprint = "#record.value()")
    public void onPayment(ConsumerRecord<String, String> record) {
        String[] parts = record.value().split(":", 2);
        if (parts.length != 2 || !parts[1].matches("[0-9]{1,15}")) {
            // REJECTED: dead-lettered to <topic>-dlt at once with this reason, never marked done
            throw new DeadLetterException("payment " + record.key() + " is not <account>:<cents>", null);
        }
        long cents = Long.parseLong(parts[1]);
        if (jdbc.update("UPDATE account SET balance_cents = balance_cents - ? WHERE id = ?", cents, parts[0]) != 1) {
            throw new DeadLetterException("payment " + record.key() + ": no account " + parts[0], null);
        }
        jdbc.update(
                "INSERT INTO payment (payment_id, account_id, amount_cents) VALUES (?, ?, ?)",
                record.key(),
                parts[0],
                cents);
    }
}
