/**
 * The Redis lease store, {@link dev.idem.redis.RedisStore}, and the node-id lease store of message id generators,
 * {@link dev.idem.redis.RedisNodeIdLeaseStore}. Everything else in this package is internal.
 */
@NullMarked
package dev.idem.redis;

import org.jspecify.annotations.NullMarked;
