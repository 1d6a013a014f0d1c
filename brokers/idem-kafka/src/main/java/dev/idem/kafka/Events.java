package dev.idem.kafka;

import dev.idem.IdempotencyListener;
import dev.idem.Outcome;
import java.time.Duration;
import org.apache.kafka.common.TopicPartition;

/** What the runner tells its listener: retries, dead letters, commits and overdue handlers (source {@code kafka}). */
final class Events {
    static final String SOURCE = "kafka";
    private static final System.Logger LOG = System.getLogger(Events.class.getName());

    private final String namespace;
    private final IdempotencyListener listener;

    Events(String namespace, IdempotencyListener listener) {
        this.namespace = namespace;
        this.listener = listener;
    }

    void retryScheduled(Pending<?, ?> p, Outcome outcome, Duration delay) {
        LOG.log(
                System.Logger.Level.DEBUG,
                () -> namespace + " " + where(p) + " retry in " + delay.toMillis() + " ms after " + outcome);
    }

    void deadLettered(Pending<?, ?> p, Outcome outcome) {
        LOG.log(System.Logger.Level.DEBUG, () -> namespace + " " + where(p) + " dead-lettered: " + outcome);
    }

    void committed(TopicPartition tp, long offset) {
        LOG.log(System.Logger.Level.TRACE, () -> namespace + " committed " + tp + "@" + offset);
    }

    void handlerTimeout(TopicPartition tp, long offset, Duration timeout) {
        LOG.log(
                System.Logger.Level.WARNING,
                "{0} {1}@{2}: the handler ran longer than {3} ms and was interrupted",
                namespace,
                tp,
                offset,
                timeout.toMillis());
    }

    private static String where(Pending<?, ?> p) {
        return p.raw.topic() + "-" + p.raw.partition() + "@" + p.raw.offset();
    }

    IdempotencyListener listener() {
        return listener;
    }
}
