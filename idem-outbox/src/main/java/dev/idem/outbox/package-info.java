/** The transactional outbox: {@link dev.idem.outbox.Outbox} writes, {@link dev.idem.outbox.OutboxRelay} publishes. */
@NullMarked
package dev.idem.outbox;

import org.jspecify.annotations.NullMarked;
