package dev.idem.spring.app;

import dev.idem.spring.Idempotent;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/**
 * One ledger row per applied payment. A value {@code fail:N} writes its row and then throws on its first N attempts,
 * so the transaction rolls back.
 */
@Component
public class Ledger {
    private final JdbcTemplate jdbc;
    private final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
    private final List<List<String>> batchCalls = new CopyOnWriteArrayList<>();

    public Ledger(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    /** For the batch listener: each record in a transaction of its own. */
    @Transactional
    @Idempotent(namespace = "batch-payments", key = "#record.key()")
    public void applyFromBatch(ConsumerRecord<String, String> record) {
        apply(record);
    }

    /** For the transactional batch listener: all the records it was given, in one transaction. */
    void applyAll(List<ConsumerRecord<String, String>> records) {
        batchCalls.add(records.stream().map(ConsumerRecord::key).toList());
        records.forEach(this::apply);
    }

    /** The keys of every call of {@link #applyAll}, committed or rolled back. */
    public List<List<String>> batchCalls() {
        return List.copyOf(batchCalls);
    }

    void apply(ConsumerRecord<String, String> record) {
        int attempt =
                attempts.computeIfAbsent(record.key(), k -> new AtomicInteger()).incrementAndGet();
        jdbc.update("INSERT INTO ledger (payment_id, entry) VALUES (?, ?)", record.key(), record.value());
        String value = record.value();
        if (value.startsWith("fail:") && attempt <= Integer.parseInt(value.substring(5))) {
            throw new IllegalStateException("payment " + record.key() + " failed on attempt " + attempt);
        }
    }

    public int attempts(String paymentId) {
        AtomicInteger n = attempts.get(paymentId);
        return n == null ? 0 : n.get();
    }

    public int rows(String paymentId) {
        return jdbc.queryForObject("SELECT COUNT(*) FROM ledger WHERE payment_id = ?", Integer.class, paymentId);
    }
}
