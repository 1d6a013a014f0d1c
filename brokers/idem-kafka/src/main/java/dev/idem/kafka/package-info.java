/**
 * Kafka: {@link dev.idem.kafka.IdempotentKafkaConsumer}, a consumer runner that owns the poll loop for a guarded
 * handler, and {@link dev.idem.kafka.IdempotentProducer}, producer helpers that fix the idempotency key before the
 * first send.
 */
@NullMarked
package dev.idem.kafka;

import org.jspecify.annotations.NullMarked;
