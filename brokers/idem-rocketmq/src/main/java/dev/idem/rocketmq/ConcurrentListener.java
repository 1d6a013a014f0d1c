package dev.idem.rocketmq;

import dev.idem.spi.Verdict;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The concurrent listener. Each message of a batch is handled in turn, with the {@link RedeliveryAttempts} it carries;
 * then what is final is acknowledged and only the rest is retried:
 *
 * <ul>
 *   <li>a trailing run of counted retries is left to RocketMQ: {@code ackIndex} just before it (or {@code
 *       RECONSUME_LATER} when it is the whole batch) with the delay level of the longest wanted delay;
 *   <li>every other message that is not final is settled here, one by one: a dead-letter copy with the reason, an
 *       uncounted retry copy for a wait, or RocketMQ's counted send-back;
 *   <li>if the broker refuses one of those, {@code ackIndex} stops before it and RocketMQ retries it and the messages
 *       after it (those already settled come back as duplicates, which the guard answers).
 * </ul>
 */
final class ConcurrentListener implements MessageListenerConcurrently {
    private final Handling handling;
    private final Resends resends;
    private final DelayLevels delayLevels;
    private final Events events;

    ConcurrentListener(Handling handling, Resends resends, DelayLevels delayLevels, Events events) {
        this.handling = handling;
        this.resends = resends;
        this.delayLevels = delayLevels;
        this.events = events;
    }

    @Override
    public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> messages, ConsumeConcurrentlyContext context) {
        List<Handling.Handled> handled = new ArrayList<>(messages.size());
        for (MessageExt message : messages) {
            handled.add(handling.handle(message, RedeliveryAttempts.of(message)));
        }
        int tail = messages.size();
        while (tail > 0 && handled.get(tail - 1).verdict() instanceof Verdict.Retry retry && retry.counted()) {
            tail--;
        }
        for (int i = 0; i < tail; i++) {
            if (!settle(messages.get(i), handled.get(i))) {
                return retryFrom(i, messages, handled, context);
            }
        }
        return retryFrom(tail, messages, handled, context);
    }

    /** Acknowledges messages before {@code first} and has RocketMQ send back the others. */
    private ConsumeConcurrentlyStatus retryFrom(
            int first, List<MessageExt> messages, List<Handling.Handled> handled, ConsumeConcurrentlyContext context) {
        if (first == messages.size()) {
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        }
        int level = 1;
        for (int i = first; i < messages.size(); i++) {
            if (handled.get(i).verdict() instanceof Verdict.Retry retry) {
                level = Math.max(level, delayLevels.levelFor(retry.delay()));
            }
        }
        for (int i = first; i < messages.size(); i++) {
            if (handled.get(i).verdict() instanceof Verdict.Retry retry && retry.counted()) {
                events.retryScheduled(messages.get(i), handled.get(i), level);
            }
        }
        context.setDelayLevelWhenNextConsume(level);
        if (first == 0) {
            return ConsumeConcurrentlyStatus.RECONSUME_LATER;
        }
        context.setAckIndex(first - 1);
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
    }

    private boolean settle(MessageExt message, Handling.Handled handled) {
        Verdict verdict = handled.verdict();
        if (verdict instanceof Verdict.DeadLetter dead) {
            // Not RocketMQ's send-back to %DLQ% if the copy fails: it would lose the reason. Retried instead.
            boolean stored = resends.deadLetter(message, dead);
            if (stored) {
                events.deadLettered(message, handled);
            }
            return stored;
        }
        if (verdict instanceof Verdict.Retry retry) {
            int level = delayLevels.levelFor(retry.delay());
            boolean stored = retry.counted()
                    ? resends.sendBack(message, level)
                    : resends.retryUncounted(message, retry.attempts(), level) || resends.sendBack(message, level);
            if (stored) {
                events.retryScheduled(message, handled, level);
            }
            return stored;
        }
        events.committed(message, handled);
        return true;
    }
}
