package dev.idem.rocketmq;

import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.WeakHashMap;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The orderly listener: messages of a queue are handled in queue order, and the queue stops at the first one that is
 * not final ({@code SUSPEND_CURRENT_QUEUE_A_MOMENT} for the retry delay; RocketMQ caps a suspension at 30 s). A batch
 * is redelivered whole after a suspension, so its final messages come back first and the guard answers them as
 * duplicates. RocketMQ retries orderly messages locally, on the same message objects: the handler's own attempts are
 * counted in {@link IdempotentRocketMQ#HANDLER_ATTEMPTS} on the object, so that waiting for a key in progress is not
 * counted; the count starts again on another consumer after a rebalance. The message objects copied to {@code %DLQ%}
 * are remembered (weakly, by identity: not in a property, which a producer could set), so that the redelivered batch
 * does not copy them again.
 */
final class OrderlyListener implements MessageListenerOrderly {
    private final Decider decider;
    private final Resends resends;
    private final Duration deadLetterRetry;
    private final Events events;
    private final Set<MessageExt> deadLettered =
            Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

    OrderlyListener(Decider decider, Resends resends, Duration deadLetterRetry, Events events) {
        this.decider = decider;
        this.resends = resends;
        this.deadLetterRetry = deadLetterRetry;
        this.events = events;
    }

    @Override
    public ConsumeOrderlyStatus consumeMessage(List<MessageExt> messages, ConsumeOrderlyContext context) {
        for (MessageExt message : messages) {
            if (deadLettered.contains(message)) {
                continue; // its copy is in %DLQ% already: a batch redelivered after a suspension copies it again
            }
            Decision decision = decider.decide(message, handlerAttempts(message) + 1);
            switch (decision.verb()) {
                case ACK -> events.committed(message, decision);
                case DEAD_LETTER -> {
                    if (!resends.deadLetter(message, decision)) {
                        return suspend(context, deadLetterRetry);
                    }
                    deadLettered.add(message);
                    events.deadLettered(message, decision);
                }
                case RETRY -> {
                    MessageAccessor.putProperty(
                            message, IdempotentRocketMQ.HANDLER_ATTEMPTS, Integer.toString(decision.attempt()));
                    events.retryScheduled(message, decision, 0);
                    return suspend(context, decision.delay());
                }
                case WAIT -> {
                    events.retryScheduled(message, decision, 0);
                    return suspend(context, decision.delay());
                }
            }
        }
        return ConsumeOrderlyStatus.SUCCESS;
    }

    private static ConsumeOrderlyStatus suspend(ConsumeOrderlyContext context, Duration delay) {
        context.setSuspendCurrentQueueTimeMillis(Math.max(10, delay.toMillis()));
        return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
    }

    /**
     * The count so far. A producer can set the property too: what is not a count reads as none, and the count stops
     * one short of {@code Integer.MAX_VALUE}, so that the next attempt is still an int (and beyond any bound).
     */
    private static int handlerAttempts(MessageExt message) {
        String attempts = message.getProperty(IdempotentRocketMQ.HANDLER_ATTEMPTS);
        if (attempts == null) {
            return 0;
        }
        try {
            return (int) Math.max(0, Math.min(Long.parseLong(attempts.trim()), Integer.MAX_VALUE - 1L));
        } catch (NumberFormatException e) {
            return 0;
        }
    }
}
