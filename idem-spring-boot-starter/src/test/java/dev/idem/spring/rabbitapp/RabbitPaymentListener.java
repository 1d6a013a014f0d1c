package dev.idem.spring.rabbitapp;

import dev.idem.spring.Idempotent;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;

/**
 * One ledger row per payment, keyed by the AMQP message id. A body {@code fail:N} writes its row and then throws on
 * its first N attempts, so the transaction rolls back.
 */
@Component
public class RabbitPaymentListener {
    private final JdbcTemplate jdbc;
    private final Map<String, List<Instant>> attempts = new ConcurrentHashMap<>();

    public RabbitPaymentListener(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    // readme:spring-rabbit-listener begin
    @RabbitListener(queues = "${payments.queue}")
    @Transactional
    @Idempotent(
            namespace = "rabbit-payments",
            key = "#message.messageProperties.messageId",
            fingerprint = "#message.body")
    public void onPayment(Message message) {
        apply(message.getMessageProperties().getMessageId(), new String(message.getBody(), StandardCharsets.UTF_8));
    }
    // readme:spring-rabbit-listener end

    private void apply(String paymentId, String body) {
        List<Instant> tries = attempts.computeIfAbsent(paymentId, k -> new CopyOnWriteArrayList<>());
        tries.add(Instant.now());
        jdbc.update("INSERT INTO ledger (payment_id, entry) VALUES (?, ?)", paymentId, body);
        if (body.startsWith("fail:") && tries.size() <= Integer.parseInt(body.substring(5))) {
            throw new IllegalStateException("payment " + paymentId + " failed on attempt " + tries.size());
        }
    }

    /** When each call of the method for {@code paymentId} began. */
    public List<Instant> attempts(String paymentId) {
        return attempts.getOrDefault(paymentId, List.of());
    }

    public int rows(String paymentId) {
        return jdbc.queryForObject("SELECT COUNT(*) FROM ledger WHERE payment_id = ?", Integer.class, paymentId);
    }
}
