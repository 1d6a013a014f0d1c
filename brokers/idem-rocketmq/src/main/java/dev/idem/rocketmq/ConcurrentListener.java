package dev.idem.rocketmq;

import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The concurrent listener. Each message of a batch is handled in turn; then what is final is acknowledged and only
 * the rest is retried:
 *
 * <ul>
 *   <li>a trailing run of messages to retry is left to RocketMQ: {@code ackIndex} just before it (or {@code
 *       RECONSUME_LATER} when it is the whole batch) with the delay level of the longest wanted delay;
 *   <li>every other message that is not final is settled here, one by one: a dead-letter copy with the reason, an
 *       uncounted retry copy for a key in progress, or RocketMQ's counted send-back;
 *   <li>if the broker refuses one of those, {@code ackIndex} stops before it and RocketMQ retries it and the messages
 *       after it (those already settled come back as duplicates, which the guard answers).
 * </ul>
 */
final class ConcurrentListener implements MessageListenerConcurrently {
    private final Decider decider;
    private final Resends resends;
    private final DelayLevels delayLevels;
    private final Events events;

    ConcurrentListener(Decider decider, Resends resends, DelayLevels delayLevels, Events events) {
        this.decider = decider;
        this.resends = resends;
        this.delayLevels = delayLevels;
        this.events = events;
    }

    @Override
    public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> messages, ConsumeConcurrentlyContext context) {
        List<Decision> decisions = new ArrayList<>(messages.size());
        for (MessageExt message : messages) {
            decisions.add(decider.decide(message, message.getReconsumeTimes() + 1));
        }
        int tail = messages.size();
        while (tail > 0 && decisions.get(tail - 1).verb() == Decision.Verb.RETRY) {
            tail--;
        }
        for (int i = 0; i < tail; i++) {
            if (!settle(messages.get(i), decisions.get(i))) {
                return retryFrom(i, messages, decisions, context);
            }
        }
        return retryFrom(tail, messages, decisions, context);
    }

    /** Acknowledges messages before {@code first} and has RocketMQ send back the others. */
    private ConsumeConcurrentlyStatus retryFrom(
            int first, List<MessageExt> messages, List<Decision> decisions, ConsumeConcurrentlyContext context) {
        if (first == messages.size()) {
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        }
        int level = 1;
        for (int i = first; i < messages.size(); i++) {
            Decision decision = decisions.get(i);
            if (decision.verb() == Decision.Verb.RETRY || decision.verb() == Decision.Verb.WAIT) {
                level = Math.max(level, delayLevels.levelFor(decision.delay()));
            }
        }
        for (int i = first; i < messages.size(); i++) {
            if (decisions.get(i).verb() == Decision.Verb.RETRY) {
                events.retryScheduled(messages.get(i), decisions.get(i), level);
            }
        }
        context.setDelayLevelWhenNextConsume(level);
        if (first == 0) {
            return ConsumeConcurrentlyStatus.RECONSUME_LATER;
        }
        context.setAckIndex(first - 1);
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
    }

    private boolean settle(MessageExt message, Decision decision) {
        return switch (decision.verb()) {
            case ACK -> {
                events.committed(message, decision);
                yield true;
            }
            case DEAD_LETTER -> {
                // Not RocketMQ's send-back to %DLQ% if the copy fails: it would lose the reason. Retried instead.
                boolean stored = resends.deadLetter(message, decision);
                if (stored) {
                    events.deadLettered(message, decision);
                }
                yield stored;
            }
            case WAIT -> {
                int level = delayLevels.levelFor(decision.delay());
                boolean stored = resends.retryUncounted(message, level) || resends.sendBack(message, level);
                if (stored) {
                    events.retryScheduled(message, decision, level);
                }
                yield stored;
            }
            case RETRY -> {
                int level = delayLevels.levelFor(decision.delay());
                boolean stored = resends.sendBack(message, level);
                if (stored) {
                    events.retryScheduled(message, decision, level);
                }
                yield stored;
            }
        };
    }
}
