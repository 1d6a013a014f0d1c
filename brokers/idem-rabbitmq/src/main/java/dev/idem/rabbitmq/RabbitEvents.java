package dev.idem.rabbitmq;

import dev.idem.IdempotencyKey;
import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;

/** The adapter's events (source {@value #SOURCE}), told to the listener; a listener that throws is logged. */
final class RabbitEvents {
    static final String SOURCE = "rabbitmq";
    private static final System.Logger LOG = System.getLogger(RabbitEvents.class.getName());

    private final IdempotencyListener listener;
    private final String queue;

    RabbitEvents(IdempotencyListener listener, String queue) {
        this.listener = listener;
        this.queue = queue;
    }

    void committed(String key, Outcome outcome, int attempt) {
        LOG.log(
                System.Logger.Level.TRACE,
                () -> queue + " " + logId(key) + " acked at attempt " + attempt + ": " + outcome);
    }

    void retryScheduled(String key, Outcome outcome, int attempt, Duration delay) {
        LOG.log(
                System.Logger.Level.DEBUG,
                () -> queue + " " + logId(key) + " retry in " + delay.toMillis() + " ms after attempt " + attempt + ": "
                        + outcome);
    }

    void deadLettered(Outcome outcome, int attempt) {
        LOG.log(System.Logger.Level.DEBUG, () -> queue + " dead-lettered at attempt " + attempt + ": " + outcome);
    }

    /** Like {@link IdempotencyKey#logId()}, with the queue for namespace: never the raw key. */
    private String logId(String key) {
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
            return queue + '/' + HexFormat.of().formatHex(hash).substring(0, 12);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
