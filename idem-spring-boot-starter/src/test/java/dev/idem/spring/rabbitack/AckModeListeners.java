package dev.idem.spring.rabbitack;

import com.rabbitmq.client.Channel;
import dev.idem.spring.Idempotent;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
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
 * One ledger row per payment, keyed by the AMQP message id; a body {@code fail:N} throws on its first N attempts.
 * Notices are not guarded and are acked by hand.
 */
@Component
public class AckModeListeners {
    private final JdbcTemplate jdbc;
    private final Map<String, Integer> attempts = new ConcurrentHashMap<>();
    private final List<String> notices = new CopyOnWriteArrayList<>();

    public AckModeListeners(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @RabbitListener(queues = "${ack.payments-queue}", ackMode = "AUTO")
    @Transactional
    @Idempotent(namespace = "ack-payments", key = "#message.messageProperties.messageId", fingerprint = "#message.body")
    public void onPayment(Message message) {
        String id = message.getMessageProperties().getMessageId();
        String body = new String(message.getBody(), StandardCharsets.UTF_8);
        int attempt = attempts.merge(id, 1, Integer::sum);
        jdbc.update("INSERT INTO ledger (payment_id, entry) VALUES (?, ?)", id, body);
        if (body.startsWith("fail:") && attempt <= Integer.parseInt(body.substring(5))) {
            throw new IllegalStateException("payment " + id + " failed on attempt " + attempt);
        }
    }

    @RabbitListener(queues = "${ack.notices-queue}")
    public void onNotice(Message message, Channel channel) throws IOException {
        notices.add(new String(message.getBody(), StandardCharsets.UTF_8));
        channel.basicAck(message.getMessageProperties().getDeliveryTag(), false);
    }

    /** How many times the method body ran for {@code paymentId}. */
    public int attempts(String paymentId) {
        return attempts.getOrDefault(paymentId, 0);
    }

    public int rows(String paymentId) {
        return jdbc.queryForObject("SELECT COUNT(*) FROM ledger WHERE payment_id = ?", Integer.class, paymentId);
    }

    public List<String> notices() {
        return notices;
    }
}
