/** The outbox's RocketMQ publisher (needs idem-rocketmq). */
@NullMarked
package dev.idem.outbox.rocketmq;

import org.jspecify.annotations.NullMarked;
