package dev.idem.rabbitmq;

import com.rabbitmq.client.AMQP;
import dev.idem.spi.Attempts;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The properties of the copies the processor publishes: a retry copy (to the retry queue, back to the work queue when
 * its TTL ends) and a dead letter (to the dead-letter exchange). Both keep the body, the {@code message-id} and the
 * other properties; what they do with the delivery's headers:
 *
 * <ul>
 *   <li>Both drop the headers that are instructions to the broker for the first publish or this delivery only: {@code
 *       CC} and {@code BCC} (sender-selected distribution: the copy would be routed again, at once, to every queue they
 *       name), {@code x-delay} (the delayed-message exchange's delay of the first publish) and {@code x-delivery-count}
 *       (a quorum queue's count of this copy's deliveries). Both drop {@code user-id} (the broker refuses a publish
 *       whose user-id is not the publishing connection's user) and {@code expiration}.
 *   <li>A retry copy drops the broker's dead-letter history ({@code x-death}, {@code x-first-death-*}, {@code
 *       x-last-death-*}): an {@code x-death} that names the work queue (a quorum queue's {@code x-delivery-limit}, an
 *       operator's replay from the dead-letter queue, a producer) makes the broker drop the copy as a dead-letter cycle
 *       when its TTL ends. The broker writes the history again on the way back. It drops the {@code idem-dlq-*}
 *       headers of an earlier dead letter, and carries the {@link Attempts} in {@value DeliveryProcessor#ATTEMPTS_HEADER}
 *       and {@value #WAITS_HEADER}.
 *   <li>A dead letter keeps the dead-letter history (for the operator), drops the attempt counts (a message replayed
 *       from the dead-letter queue starts with the whole retry budget; the count is in {@value
 *       DeliveryProcessor#DLQ_ATTEMPTS}) and carries the {@code idem-dlq-*} headers, overwriting any a producer set.
 * </ul>
 */
final class CopyProperties {
    /** Waits ({@code IN_PROGRESS}) so far, which only grow the back-off. */
    static final String WAITS_HEADER = "idem-waits";

    private static final List<String> BROKER_INSTRUCTIONS = List.of("CC", "BCC", "x-delay", "x-delivery-count");
    private static final List<String> DEAD_LETTER_HISTORY = List.of(
            "x-death",
            "x-first-death-queue",
            "x-first-death-reason",
            "x-first-death-exchange",
            "x-last-death-queue",
            "x-last-death-reason",
            "x-last-death-exchange");
    private static final List<String> DEAD_LETTER_HEADERS = List.of(
            DeliveryProcessor.DLQ_REASON,
            DeliveryProcessor.DLQ_OUTCOME,
            DeliveryProcessor.DLQ_ATTEMPTS,
            DeliveryProcessor.DLQ_QUEUE,
            DeliveryProcessor.DLQ_EXCHANGE,
            DeliveryProcessor.DLQ_ROUTING_KEY);

    private CopyProperties() {}

    /** A retry copy that comes back after {@code delay} carrying {@code attempts}. */
    static AMQP.BasicProperties retryCopy(AMQP.BasicProperties delivered, Attempts attempts, Duration delay) {
        Map<String, Object> headers = headersWithout(delivered, BROKER_INSTRUCTIONS);
        headers.keySet().removeAll(DEAD_LETTER_HISTORY);
        headers.keySet().removeAll(DEAD_LETTER_HEADERS);
        headers.put(DeliveryProcessor.ATTEMPTS_HEADER, attempts.failures());
        headers.put(WAITS_HEADER, attempts.waits());
        return kept(delivered)
                .headers(headers)
                .expiration(Long.toString(delay.toMillis()))
                .build();
    }

    /** A dead letter carrying {@code deadLetterHeaders} ({@code idem-dlq-*}); without the message's own when not {@code withOwn}. */
    static AMQP.BasicProperties deadLetter(
            AMQP.BasicProperties delivered, Map<String, Object> deadLetterHeaders, boolean withOwn) {
        Map<String, Object> headers = withOwn ? headersWithout(delivered, BROKER_INSTRUCTIONS) : new HashMap<>();
        headers.remove(DeliveryProcessor.ATTEMPTS_HEADER);
        headers.remove(WAITS_HEADER);
        headers.putAll(deadLetterHeaders);
        return kept(delivered).headers(headers).build();
    }

    /**
     * The counts a delivery carries, read only from a copy that came back through {@code retryQueue}: the broker's
     * newest {@code x-death} entry names it (a retry copy leaves without history, so the broker's entry on the way back
     * is its first). The same headers on a message a producer published, or an operator replayed, are not the
     * adapter's: such a message starts with {@link Attempts#NONE}. A count is never negative; an unreadable one is 0.
     */
    static Attempts attemptsOf(AMQP.BasicProperties delivered, String retryQueue) {
        Map<String, Object> headers = delivered.getHeaders();
        if (headers == null || !cameBackThrough(headers, retryQueue)) {
            return Attempts.NONE;
        }
        return new Attempts(count(headers.get(DeliveryProcessor.ATTEMPTS_HEADER)), count(headers.get(WAITS_HEADER)));
    }

    private static boolean cameBackThrough(Map<String, Object> headers, String retryQueue) {
        return headers.get("x-death") instanceof List<?> deaths
                && !deaths.isEmpty()
                && deaths.get(0) instanceof Map<?, ?> newest
                && newest.get("queue") != null
                && retryQueue.equals(newest.get("queue").toString());
    }

    private static int count(@Nullable Object value) {
        long n;
        if (value instanceof Number number) {
            n = number.longValue();
        } else if (value != null) {
            try {
                n = Long.parseLong(value.toString().trim());
            } catch (NumberFormatException e) {
                return 0;
            }
        } else {
            return 0;
        }
        return (int) Math.max(0, Math.min(n, Integer.MAX_VALUE));
    }

    private static Map<String, Object> headersWithout(AMQP.BasicProperties delivered, List<String> names) {
        Map<String, Object> headers = delivered.getHeaders();
        Map<String, Object> copy = headers == null ? new HashMap<>() : new HashMap<>(headers);
        copy.keySet().removeAll(names);
        return copy;
    }

    private static AMQP.BasicProperties.Builder kept(AMQP.BasicProperties p) {
        return new AMQP.BasicProperties.Builder()
                .contentType(p.getContentType())
                .contentEncoding(p.getContentEncoding())
                .deliveryMode(p.getDeliveryMode())
                .priority(p.getPriority())
                .correlationId(p.getCorrelationId())
                .replyTo(p.getReplyTo())
                .messageId(p.getMessageId())
                .timestamp(p.getTimestamp())
                .type(p.getType())
                .appId(p.getAppId())
                .clusterId(p.getClusterId());
    }
}
