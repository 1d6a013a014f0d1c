/**
 * Test support: {@link dev.idem.testkit.IdempotencyStoreContract} (every store passes it), {@link
 * dev.idem.testkit.TestServers} (real servers for integration tests) and {@link dev.idem.testkit.MutableClock}.
 */
@NullMarked
package dev.idem.testkit;

import org.jspecify.annotations.NullMarked;
