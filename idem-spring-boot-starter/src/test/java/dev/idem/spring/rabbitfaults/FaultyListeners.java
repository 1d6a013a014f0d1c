package dev.idem.spring.rabbitfaults;

import dev.idem.spring.Idempotent;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.messaging.handler.annotation.Payload;
import org.springframework.stereotype.Component;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/** One ledger row per message id; each listener fails on its first attempt at a message, its own way. */
@Component
public class FaultyListeners {
    private final JdbcTemplate jdbc;
    private final Map<String, Integer> attempts = new ConcurrentHashMap<>();

    public FaultyListeners(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @RabbitListener(id = "errors", queues = "${faults.errors-queue}")
    @Transactional
    @Idempotent(namespace = "faults-errors", key = "#message.messageProperties.messageId")
    public void throwsAnErrorFirst(Message message) {
        if (apply(message) == 1) {
            throw new AssertionError("an Error, not an Exception");
        }
    }

    @RabbitListener(id = "after-commit", queues = "${faults.after-commit-queue}")
    @Transactional
    @Idempotent(namespace = "faults-after-commit", key = "#message.messageProperties.messageId")
    public void failsAfterTheCommitFirst(Message message) {
        if (apply(message) == 1) {
            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                @Override
                public void afterCommit() {
                    throw new IllegalStateException("after the commit");
                }
            });
        }
    }

    @RabbitListener(id = "typed", queues = "${faults.typed-queue}")
    @Transactional
    @Idempotent(namespace = "faults-typed", key = "#message.messageProperties.messageId")
    public void takesAnAmount(@Payload Integer amount, Message message) {
        apply(message);
    }

    /** Runs for 50 ms inside its transaction, long enough for the database to end the session under it. */
    @RabbitListener(id = "outage", queues = "${faults.outage-queue}", concurrency = "3")
    @Transactional
    @Idempotent(namespace = "faults-outage", key = "#message.messageProperties.messageId")
    public void duringOutage(Message message) {
        jdbc.execute("SELECT pg_sleep(0.05)");
        apply(message);
    }

    private int apply(Message message) {
        String id = message.getMessageProperties().getMessageId();
        jdbc.update(
                "INSERT INTO ledger (payment_id, entry) VALUES (?, ?)",
                id,
                new String(message.getBody(), StandardCharsets.UTF_8));
        return attempts.merge(id, 1, Integer::sum);
    }

    /** How many times a method body ran for {@code id}. */
    public int attempts(String id) {
        return attempts.getOrDefault(id, 0);
    }

    public int rows(String id) {
        return jdbc.queryForObject("SELECT COUNT(*) FROM ledger WHERE payment_id = ?", Integer.class, id);
    }
}
