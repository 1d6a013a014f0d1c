package dev.idem.rocketmq;

import dev.idem.spi.Attempts;
import dev.idem.spi.Verdict;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The orderly listener: messages of a queue are handled in queue order, and the queue stops at the first one that is
 * not final ({@code SUSPEND_CURRENT_QUEUE_A_MOMENT} for the retry delay; RocketMQ caps a suspension at 30 s). A batch
 * is redelivered whole after a suspension, so its final messages come back first and the guard answers them as
 * duplicates. RocketMQ retries orderly messages locally, on the same message objects, and counts every suspension in
 * {@code reconsumeTimes}, waits included: the {@link Attempts} of each message are kept here instead, by message
 * object (weakly, by identity: not in a property, which a producer could set), and start again on another consumer
 * after a rebalance. The message objects copied to {@code %DLQ%} are remembered the same way, so that the redelivered
 * batch does not copy them again.
 */
final class OrderlyListener implements MessageListenerOrderly {
    private final Handling handling;
    private final Resends resends;
    private final Duration deadLetterRetry;
    private final Events events;
    private final Map<MessageExt, Attempts> attempts = Collections.synchronizedMap(new WeakHashMap<>());
    private final Set<MessageExt> deadLettered =
            Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));

    OrderlyListener(Handling handling, Resends resends, Duration deadLetterRetry, Events events) {
        this.handling = handling;
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
            Handling.Handled handled = handling.handle(message, attempts.getOrDefault(message, Attempts.NONE));
            Verdict verdict = handled.verdict();
            if (verdict instanceof Verdict.Retry retry) {
                attempts.put(message, retry.attempts());
                events.retryScheduled(message, handled, 0);
                return suspend(context, retry.delay());
            }
            if (verdict instanceof Verdict.DeadLetter dead) {
                if (!resends.deadLetter(message, dead)) {
                    return suspend(context, deadLetterRetry);
                }
                deadLettered.add(message);
                events.deadLettered(message, handled);
            } else {
                events.committed(message, handled);
            }
            attempts.remove(message);
        }
        return ConsumeOrderlyStatus.SUCCESS;
    }

    private static ConsumeOrderlyStatus suspend(ConsumeOrderlyContext context, Duration delay) {
        context.setSuspendCurrentQueueTimeMillis(Math.max(10, delay.toMillis()));
        return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
    }
}
