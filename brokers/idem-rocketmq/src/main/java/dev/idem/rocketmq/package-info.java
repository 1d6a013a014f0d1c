/**
 * Guarded RocketMQ push-consumer listeners ({@link dev.idem.rocketmq.IdempotentRocketMQ}) and producer helpers
 * ({@link dev.idem.rocketmq.RocketMQProducers}) for the RocketMQ 5.x remoting client.
 */
@NullMarked
package dev.idem.rocketmq;

import org.jspecify.annotations.NullMarked;
