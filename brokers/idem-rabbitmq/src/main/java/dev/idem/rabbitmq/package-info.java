/**
 * RabbitMQ: {@link dev.idem.rabbitmq.IdempotentRabbitConsumer}, a manual-ack consumer for a guarded handler (delayed
 * retries through a TTL retry queue, dead-lettering with the reason), {@link dev.idem.rabbitmq.DeliveryProcessor},
 * the same per-delivery logic for a container that owns its channels (e.g. Spring AMQP), {@link
 * dev.idem.rabbitmq.RabbitTopology}, the queues and exchanges it needs, and {@link dev.idem.rabbitmq.RabbitPublisher},
 * a confirming publisher that fixes the message id before the first publish.
 */
@NullMarked
package dev.idem.rabbitmq;

import org.jspecify.annotations.NullMarked;
