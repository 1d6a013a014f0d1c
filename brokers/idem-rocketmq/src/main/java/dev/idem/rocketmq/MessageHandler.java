package dev.idem.rocketmq;

import dev.idem.Outcome;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * A guarded message handler: it runs the effect through an Idem guard with the extracted key and returns the guard's
 * {@link Outcome}, e.g. {@code (key, message) -> guard.run(key, () -> debit(message.getBody()))}.
 *
 * <p>Throwing an {@link Exception} counts as {@code FAILED} (retried with backoff, dead-lettered after the bound); a
 * {@link dev.idem.DeadLetterException} as {@code REJECTED}. An {@link Error} is not caught: RocketMQ's consume
 * service then sends the message back for a later retry, nothing is acknowledged.
 */
@FunctionalInterface
public interface MessageHandler {
    Outcome handle(String key, MessageExt message) throws Exception;
}
