/** The outbox's Kafka publisher (needs idem-kafka). */
@NullMarked
package dev.idem.outbox.kafka;

import org.jspecify.annotations.NullMarked;
