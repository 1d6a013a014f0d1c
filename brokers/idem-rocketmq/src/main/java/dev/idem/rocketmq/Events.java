package dev.idem.rocketmq;

import java.time.Duration;
import org.apache.rocketmq.common.message.MessageExt;

/** What the listeners report: retries scheduled, dead letters, commits, handlers that outran consumeTimeout. */
final class Events {
    private static final System.Logger LOG = System.getLogger(Events.class.getName());

    private final String namespace;

    Events(String namespace) {
        this.namespace = namespace;
    }

    void committed(MessageExt message, Decision decision) {}

    void retryScheduled(MessageExt message, Decision decision) {}

    void deadLettered(MessageExt message, Decision decision) {
        LOG.log(
                System.Logger.Level.WARNING,
                "{0} {1}-{2}@{3} dead-lettered ({4}): {5}",
                namespace,
                message.getTopic(),
                message.getQueueId(),
                message.getQueueOffset(),
                decision.outcome().type(),
                decision.outcome().reason());
    }

    void handlerTimeout(String key, MessageExt message, Duration elapsed, Duration consumeTimeout) {
        LOG.log(
                System.Logger.Level.WARNING,
                "{0} {1}-{2}@{3}: the handler ran {4} ms, longer than consumeTimeout ({5} ms); RocketMQ has sent the"
                        + " message back meanwhile (apache/rocketmq#1600), so its copy meets the guard",
                namespace,
                message.getTopic(),
                message.getQueueId(),
                message.getQueueOffset(),
                elapsed.toMillis(),
                consumeTimeout.toMillis());
    }
}
