package dev.idem.kafka;

import dev.idem.RetryLaterException;
import dev.idem.RetryPolicy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.header.Header;

/**
 * Producer helpers: fix the idempotency key on a record <b>before the first send</b>, so that every resend carries
 * the same key, and resend the same record after a timeout.
 *
 * <p>Kafka's idempotent producer drops the client's own internal retries of a batch, but not an application that
 * sends again after a timeout, a restarted producer, or the same message sent by two producers: those reach the
 * topic twice, and the consumer's guard recognises them by this key.
 */
public final class KafkaProducers {
    /** The header that carries the idempotency key; read it with {@code KeyExtractor.header(KEY_HEADER)}. */
    public static final String KEY_HEADER = "idem-key";

    private KafkaProducers() {}

    /**
     * The recommended producer settings: {@code enable.idempotence=true}, {@code acks=all}, {@code
     * max.in.flight.requests.per.connection=5} (the most idempotence keeps in order), {@code retries=MAX_VALUE}
     * bounded by {@code delivery.timeout.ms=120000}. Merge them into your own settings; serializers stay yours.
     */
    public static Map<String, Object> recommendedSettings() {
        return Map.of(
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                true,
                ProducerConfig.ACKS_CONFIG,
                "all",
                ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION,
                5,
                ProducerConfig.RETRIES_CONFIG,
                Integer.MAX_VALUE,
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG,
                120_000);
    }

    /**
     * Stamps {@code key} (a business key such as {@code 10086:PAY}) in the {@value #KEY_HEADER} header. Idempotent:
     * a record that already carries this key is returned as it is, so resends keep it.
     *
     * @throws IllegalArgumentException if the record already carries another key
     * @throws IllegalStateException if the record was already sent (its headers are then read-only)
     */
    public static <K, V> ProducerRecord<K, V> withKey(ProducerRecord<K, V> record, String key) {
        Objects.requireNonNull(key, "key");
        if (key.isBlank()) {
            throw new IllegalArgumentException("an idempotency key must not be blank");
        }
        byte[] bytes = key.getBytes(StandardCharsets.UTF_8);
        Header existing = record.headers().lastHeader(KEY_HEADER);
        if (existing != null) {
            if (!Arrays.equals(existing.value(), bytes)) {
                throw new IllegalArgumentException("the record already carries another idempotency key in header '"
                        + KEY_HEADER + "': stamp a key once, before the first send");
            }
            return record;
        }
        record.headers().add(KEY_HEADER, bytes);
        return record;
    }

    /** Stamps a generated message id (a random UUID) as the key, unless the record already carries one. */
    public static <K, V> ProducerRecord<K, V> withMessageId(ProducerRecord<K, V> record) {
        if (record.headers().lastHeader(KEY_HEADER) != null) {
            return record;
        }
        return withKey(record, UUID.randomUUID().toString());
    }

    /** The key stamped on {@code record}, or empty. */
    public static Optional<String> key(ProducerRecord<?, ?> record) {
        Header header = record.headers().lastHeader(KEY_HEADER);
        return Optional.ofNullable(header).map(h -> new String(h.value(), StandardCharsets.UTF_8));
    }

    /** Called before each resend. */
    @FunctionalInterface
    public interface RetryListener {
        void beforeResend(int failedAttempt, Exception failure);
    }

    /** {@link #sendWithRetry(Producer, ProducerRecord, RetryPolicy, Duration, RetryListener)} without a listener. */
    public static <K, V> RecordMetadata sendWithRetry(
            Producer<K, V> producer, ProducerRecord<K, V> record, RetryPolicy policy, Duration attemptTimeout) {
        return sendWithRetry(producer, record, policy, attemptTimeout, (attempt, failure) -> {});
    }

    /**
     * Sends {@code record} and waits up to {@code attemptTimeout} for the acknowledgement; on a timeout or a retriable
     * error, sends the <b>same</b> record again after the policy's backoff, up to {@code policy.maxAttempts()} times.
     * The record must carry its key ({@link #withKey}/{@link #withMessageId}) so that the copies a lost
     * acknowledgement leaves in the topic are recognised as duplicates by the consumer.
     *
     * @throws RetryLaterException when every attempt failed or timed out, or a non-retriable error occurred
     */
    public static <K, V> RecordMetadata sendWithRetry(
            Producer<K, V> producer,
            ProducerRecord<K, V> record,
            RetryPolicy policy,
            Duration attemptTimeout,
            RetryListener listener) {
        if (record.headers().lastHeader(KEY_HEADER) == null) {
            throw new IllegalArgumentException("stamp an idempotency key on the record before the first send"
                    + " (KafkaProducers.withKey or withMessageId): a resend without one cannot be recognised");
        }
        Exception last = null;
        for (int attempt = 1; attempt <= policy.maxAttempts(); attempt++) {
            if (last != null) {
                listener.beforeResend(attempt - 1, last);
            }
            Future<RecordMetadata> future = producer.send(record);
            try {
                return future.get(attemptTimeout.toMillis(), TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                last = e;
            } catch (ExecutionException e) {
                Throwable cause = e.getCause() == null ? e : e.getCause();
                if (!(cause instanceof RetriableException retriable)) {
                    throw new RetryLaterException(
                            "send to " + record.topic() + " failed: " + cause.getMessage(), cause);
                }
                last = retriable;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new RetryLaterException("interrupted while sending to " + record.topic(), e);
            }
            if (attempt < policy.maxAttempts() && !sleep(policy.delayAfter(attempt))) {
                throw new RetryLaterException("interrupted while sending to " + record.topic(), last);
            }
        }
        throw new RetryLaterException(
                "send to " + record.topic() + " not acknowledged after " + policy.maxAttempts() + " attempts", last);
    }

    private static boolean sleep(Duration delay) {
        try {
            Thread.sleep(delay.toMillis());
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
