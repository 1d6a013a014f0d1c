/**
 * A guarded NATS JetStream pull consumer ({@link dev.idem.nats.IdempotentNatsConsumer}) and the publisher helper
 * that fixes a message's {@code Nats-Msg-Id} before its first publish ({@link dev.idem.nats.NatsProducers}).
 */
@NullMarked
package dev.idem.nats;

import org.jspecify.annotations.NullMarked;
