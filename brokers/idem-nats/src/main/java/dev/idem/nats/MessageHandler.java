package dev.idem.nats;

import dev.idem.Outcome;
import io.nats.client.Message;

/**
 * The guarded work for one JetStream message: usually {@code guard.run(key, () -> effect(message))} or a JDBC inbox's
 * {@code handle}. The consumer turns the returned {@link Outcome} into the message's ack, delayed nak or dead letter.
 *
 * <p>Throwing an exception means the effect was not applied, classified by {@link
 * dev.idem.spi.FailureClassifier#standard()}: a store or database that cannot be reached is an uncounted wait, a
 * {@link dev.idem.DeadLetterException} dead-letters the message at once, anything else is {@code FAILED} (retried with
 * back-off, counted). Do not ack, nak or term the message yourself.
 */
@FunctionalInterface
public interface MessageHandler {
    /**
     * @param key the idempotency key read by the consumer's {@link KeyExtractor}, never blank
     * @param message the delivery (its {@code metaData().deliveredCount()} is the attempt, 1-based)
     */
    Outcome handle(String key, Message message) throws Exception;
}
