/** The outbox's NATS JetStream publisher (needs idem-nats). */
@NullMarked
package dev.idem.outbox.nats;

import org.jspecify.annotations.NullMarked;
