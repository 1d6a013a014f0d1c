package dev.idem.rocketmq;

import dev.idem.IdempotencyEvent;
import dev.idem.IdempotencyKey;
import dev.idem.IdempotencyListener;
import dev.idem.InvalidKeyException;
import dev.idem.internal.SafeListener;
import dev.idem.spi.Verdict;
import java.time.Clock;
import java.time.Duration;
import org.apache.rocketmq.common.message.MessageExt;
import org.jspecify.annotations.Nullable;

/**
 * What the listeners report to the {@link IdempotencyListener} (source {@value #SOURCE}, attempt {@code
 * reconsumeTimes + 1}): retries scheduled, dead letters, acknowledgements, handlers that outran {@code
 * consumeTimeout}. A listener that throws is logged and ignored.
 */
final class Events {
    static final String SOURCE = "rocketmq";
    private static final System.Logger LOG = System.getLogger(Events.class.getName());

    private final String namespace;
    private final SafeListener listener;
    private final Clock clock;

    Events(String namespace, IdempotencyListener listener, Clock clock) {
        this.namespace = namespace;
        this.listener = new SafeListener(listener);
        this.clock = clock;
    }

    void committed(MessageExt message, Handling.Handled handled) {
        emit(IdempotencyEvent.Type.COMMITTED, message, handled.key(), handled, where(message));
    }

    void retryScheduled(MessageExt message, Handling.Handled handled, int delayLevel) {
        emit(
                IdempotencyEvent.Type.RETRY_SCHEDULED,
                message,
                handled.key(),
                handled,
                where(message) + " retried after " + delay(handled).toMillis() + " ms"
                        + (delayLevel > 0 ? " (delay level " + delayLevel + ")" : ""));
    }

    void deadLettered(MessageExt message, Handling.Handled handled) {
        LOG.log(
                System.Logger.Level.WARNING,
                "{0} {1} dead-lettered ({2}): {3}",
                namespace,
                where(message),
                handled.verdict().outcome().type(),
                handled.verdict().outcome().reason());
        emit(
                IdempotencyEvent.Type.DEAD_LETTERED,
                message,
                handled.key(),
                handled,
                where(message) + ": " + handled.verdict().outcome().reason());
    }

    void handlerTimeout(String key, MessageExt message, Duration elapsed, Duration consumeTimeout) {
        String text = where(message) + ": the handler ran " + elapsed.toMillis() + " ms, longer than consumeTimeout ("
                + consumeTimeout.toMillis() + " ms); RocketMQ sent the message back meanwhile (apache/rocketmq#1600),"
                + " so its copy meets the guard";
        LOG.log(System.Logger.Level.WARNING, "{0} {1}", namespace, text);
        emit(IdempotencyEvent.Type.HANDLER_TIMEOUT, message, key, null, text);
    }

    private void emit(
            IdempotencyEvent.Type type,
            MessageExt message,
            @Nullable String key,
            Handling.@Nullable Handled handled,
            String text) {
        if (!listener.listens()) {
            return;
        }
        IdempotencyEvent event = IdempotencyEvent.builder(type, namespace)
                .source(SOURCE)
                .outcome(handled == null ? null : handled.verdict().outcome())
                .attempt(message.getReconsumeTimes() + 1)
                .keyLogId(logId(key))
                .time(clock.instant())
                .message(text)
                .build();
        listener.onEvent(event);
    }

    private String logId(@Nullable String key) {
        if (key == null) {
            return "<none>";
        }
        try {
            return IdempotencyKey.of(namespace, key).logId();
        } catch (InvalidKeyException e) {
            return "<invalid>";
        }
    }

    private static Duration delay(Handling.Handled handled) {
        return handled.verdict() instanceof Verdict.Retry retry ? retry.delay() : Duration.ZERO;
    }

    private static String where(MessageExt message) {
        return message.getTopic() + "-" + message.getQueueId() + "@" + message.getQueueOffset();
    }
}
