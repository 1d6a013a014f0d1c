/**
 * {@code @RocketMQMessageListener} + {@code @Idempotent}: rocketmq-spring's listener containers settled by
 * idem-rocketmq's listeners.
 */
@NullMarked
package dev.idem.spring.rocketmq;

import org.jspecify.annotations.NullMarked;
