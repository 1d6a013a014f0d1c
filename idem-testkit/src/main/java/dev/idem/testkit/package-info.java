/**
 * Test support: {@link dev.idem.testkit.IdempotencyStoreContract} (every store passes it), {@link
 * dev.idem.testkit.TestServers} (real servers for integration tests), {@link dev.idem.testkit.PrivateServer} (a
 * server of a test's own, to restart or kill) and {@link dev.idem.testkit.MutableClock}.
 */
@NullMarked
package dev.idem.testkit;

import org.jspecify.annotations.NullMarked;
