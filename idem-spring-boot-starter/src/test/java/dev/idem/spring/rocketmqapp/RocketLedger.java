package dev.idem.spring.rocketmqapp;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.rocketmq.common.message.MessageExt;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/**
 * One ledger row per payment, keyed by the message's KEYS. A body {@code fail:N} writes its row and then throws on
 * its first N attempts, so the transaction rolls back and the container asks for the message again.
 */
@Component
public class RocketLedger {
    private final JdbcTemplate jdbc;
    private final Map<String, List<String>> attempts = new ConcurrentHashMap<>();

    public RocketLedger(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    void apply(MessageExt message) {
        String paymentId = message.getKeys();
        String body = new String(message.getBody(), StandardCharsets.UTF_8);
        List<String> tries = attempts.computeIfAbsent(paymentId, k -> new CopyOnWriteArrayList<>());
        tries.add(message.getMsgId() + "#" + message.getReconsumeTimes());
        jdbc.update("INSERT INTO ledger (payment_id, entry) VALUES (?, ?)", paymentId, body);
        if (body.startsWith("fail:") && tries.size() <= Integer.parseInt(body.substring(5))) {
            throw new IllegalStateException("payment " + paymentId + " failed on attempt " + tries.size());
        }
    }

    /** Each call of the method for {@code paymentId}: the delivery's msgId and reconsume count. */
    public List<String> attempts(String paymentId) {
        return attempts.getOrDefault(paymentId, List.of());
    }

    public int rows(String paymentId) {
        return jdbc.queryForObject("SELECT COUNT(*) FROM ledger WHERE payment_id = ?", Integer.class, paymentId);
    }
}
