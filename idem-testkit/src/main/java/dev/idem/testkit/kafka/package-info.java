/** {@link dev.idem.testkit.kafka.EmbeddedKafka}: a real Kafka broker in the test JVM. */
@NullMarked
package dev.idem.testkit.kafka;

import org.jspecify.annotations.NullMarked;
