/**
 * What users test with: {@link dev.idem.testkit.IdempotencyStoreContract} (every store passes it, and so must
 * yours), {@link dev.idem.testkit.Redeliveries} (duplicate, concurrent, reordered and crash-before-ack deliveries of
 * your own handler), {@link dev.idem.testkit.MutableClock} and {@link dev.idem.testkit.TcpProxy} (a connection
 * that loses replies).
 */
@NullMarked
package dev.idem.testkit;

import org.jspecify.annotations.NullMarked;
