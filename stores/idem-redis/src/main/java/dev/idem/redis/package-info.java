/**
 * The Redis lease store: {@link dev.idem.redis.RedisStore}. Everything else in this package is internal.
 */
@NullMarked
package dev.idem.redis;

import org.jspecify.annotations.NullMarked;
