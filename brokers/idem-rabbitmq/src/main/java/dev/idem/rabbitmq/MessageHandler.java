package dev.idem.rabbitmq;

import com.rabbitmq.client.Delivery;
import dev.idem.Outcome;

/**
 * A guarded message handler: it runs the effect through an Idem guard with the extracted key and returns the guard's
 * {@link Outcome}, e.g. {@code (key, message) -> guard.run(key, () -> debit(message.getBody()))}.
 *
 * <p>Throwing an {@link Exception} counts as {@code FAILED} (retried with backoff, dead-lettered after the bound); a
 * {@link dev.idem.DeadLetterException} as {@code REJECTED}. An {@link Error} leaves the message unacknowledged, like a
 * crash: the consumer closes its channel and the broker redelivers it.
 */
@FunctionalInterface
public interface MessageHandler {
    Outcome handle(String key, Delivery message) throws Exception;
}
