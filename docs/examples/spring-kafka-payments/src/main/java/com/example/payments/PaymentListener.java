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
 * the debit and the mark commit together, or neither does.
 */
@Component
public class PaymentListener {
    private final JdbcTemplate jdbc;

    public PaymentListener(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @KafkaListener(topics = "payments")
    @Transactional
    @Idempotent(namespace = "payments", key = "#record.key()", fingerprint = "#record.value()")
    public void onPayment(ConsumerRecord<String, String> record) {
        String[] parts = record.value().split(":", 2);
        if (parts.length != 2) {
            throw new DeadLetterException("payment " + record.key() + " is not <account>:<cents>", null);
        }
        long cents = Long.parseLong(parts[1]);
        jdbc.update("UPDATE account SET balance_cents = balance_cents - ? WHERE id = ?", cents, parts[0]);
        jdbc.update(
                "INSERT INTO payment (id, account_id, amount_cents) VALUES (?, ?, ?)", record.key(), parts[0], cents);
    }
}
