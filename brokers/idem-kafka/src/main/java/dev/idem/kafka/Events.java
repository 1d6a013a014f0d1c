package dev.idem.kafka;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.IdempotencyListener;
import dev.idem.InvalidKeyException;
import dev.idem.Outcome;
import dev.idem.internal.SafeListener;
import java.time.Duration;
import org.apache.kafka.common.TopicPartition;
import org.jspecify.annotations.Nullable;

/**
 * What the runner tells its listener, with source {@value #SOURCE}: {@code RETRY_SCHEDULED} and {@code DEAD_LETTERED}
 * (attempt = handler runs of the record), {@code COMMITTED} (the message names partition and offset) and {@code
 * HANDLER_TIMEOUT}. The namespace is the consumer group.
 * Keys appear only as their log id. A listener that throws is logged and ignored; without a listener nothing is built.
 */
final class Events {
    static final String SOURCE = "kafka";
    private static final System.Logger LOG = System.getLogger(Events.class.getName());

    private final String namespace;
    private final SafeListener listener;
    private final boolean enabled;

    Events(String namespace, IdempotencyListener listener) {
        this.namespace = namespace;
        this.listener = new SafeListener(listener);
        this.enabled = this.listener.listens();
    }

    void retryScheduled(Pending<?, ?> p, Outcome outcome, Duration delay) {
        if (enabled) {
            emit(event(IdempotencyEvent.Type.RETRY_SCHEDULED, p)
                    .outcome(outcome)
                    .message(where(p) + " retried in " + delay.toMillis() + " ms: " + outcome.reason()));
        }
    }

    void deadLettered(Pending<?, ?> p, Outcome outcome) {
        if (enabled) {
            emit(event(IdempotencyEvent.Type.DEAD_LETTERED, p)
                    .outcome(outcome)
                    .message(where(p) + " dead-lettered: " + outcome.reason()));
        }
    }

    void committed(TopicPartition tp, long offset) {
        if (enabled) {
            emit(IdempotencyEvent.builder(IdempotencyEvent.Type.COMMITTED, namespace)
                    .source(SOURCE)
                    .message(tp + " committed up to offset " + offset));
        }
    }

    void handlerTimeout(TopicPartition tp, long offset, Duration timeout) {
        LOG.log(
                System.Logger.Level.WARNING,
                "{0} {1}@{2}: the handler ran longer than {3} ms and was interrupted",
                namespace,
                tp,
                offset,
                timeout.toMillis());
        if (enabled) {
            emit(IdempotencyEvent.builder(IdempotencyEvent.Type.HANDLER_TIMEOUT, namespace)
                    .source(SOURCE)
                    .elapsed(timeout)
                    .message(tp + "@" + offset + ": the handler ran longer than " + timeout.toMillis()
                            + " ms and was interrupted"));
        }
    }

    private IdempotencyEvent.Builder event(IdempotencyEvent.Type type, Pending<?, ?> p) {
        IdempotencyEvent.Builder event =
                IdempotencyEvent.builder(type, namespace).source(SOURCE).attempt(Math.max(1, p.runs));
        String logId = keyLogId(p);
        if (logId != null) {
            event.keyLogId(logId);
        }
        return event;
    }

    private @Nullable String keyLogId(Pending<?, ?> p) {
        Pending.Read<?, ?> read = p.read;
        if (read == null || read.record() == null) {
            return null;
        }
        try {
            return IdempotencyKey.of(namespace, read.record().key()).logId();
        } catch (InvalidKeyException | IllegalArgumentException e) {
            return null;
        }
    }

    private void emit(IdempotencyEvent.Builder event) {
        listener.onEvent(event.build());
    }

    private static String where(Pending<?, ?> p) {
        return p.raw.topic() + "-" + p.raw.partition() + "@" + p.raw.offset();
    }
}
