package dev.idem.spring.kafkafaults;

import dev.idem.spring.Idempotent;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/** One ledger row per applied payment; the bodies count how often they ran. */
@Component
public class KafkaFaultListeners {
    private final JdbcTemplate jdbc;
    private final Map<String, Integer> attempts = new ConcurrentHashMap<>();

    private final OutagePayments payments;

    public KafkaFaultListeners(JdbcTemplate jdbc, OutagePayments payments) {
        this.jdbc = jdbc;
        this.payments = payments;
    }

    @KafkaListener(id = "own-factory", topics = "${faults.own-factory-topic}", containerFactory = "ownFactory")
    @Transactional
    @Idempotent(namespace = "own-factory", key = "#record.key()")
    public void onOwnFactory(ConsumerRecord<String, String> record) {
        apply(record);
    }

    /** Counts each delivery, then applies the payment through a transactional service. */
    @KafkaListener(id = "outage", topics = "${faults.outage-topic}", concurrency = "3")
    public void duringOutage(ConsumerRecord<String, String> record) {
        attempts.merge(record.key(), 1, Integer::sum);
        payments.apply(record);
    }

    private void apply(ConsumerRecord<String, String> record) {
        jdbc.update("INSERT INTO ledger (payment_id, entry) VALUES (?, ?)", record.key(), record.value());
    }

    /** How many times the outage listener got {@code id}. */
    public int attempts(String id) {
        return attempts.getOrDefault(id, 0);
    }
}
