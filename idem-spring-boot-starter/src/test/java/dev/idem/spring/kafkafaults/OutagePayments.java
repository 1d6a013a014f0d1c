package dev.idem.spring.kafkafaults;

import dev.idem.spring.Idempotent;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/** Applies a payment in a transaction that lasts 50 ms, long enough for the database to end its session under it. */
@Component
public class OutagePayments {
    private final JdbcTemplate jdbc;

    public OutagePayments(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @Transactional
    @Idempotent(namespace = "outage", key = "#record.key()")
    public void apply(ConsumerRecord<String, String> record) {
        jdbc.execute("SELECT pg_sleep(0.05)");
        jdbc.update("INSERT INTO ledger (payment_id, entry) VALUES (?, ?)", record.key(), record.value());
    }
}
