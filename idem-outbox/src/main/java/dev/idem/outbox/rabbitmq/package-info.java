/** The outbox's RabbitMQ publisher (needs idem-rabbitmq). */
@NullMarked
package dev.idem.outbox.rabbitmq;

import org.jspecify.annotations.NullMarked;
