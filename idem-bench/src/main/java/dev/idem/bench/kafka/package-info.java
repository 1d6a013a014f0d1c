/** The Kafka runner against a plain kafka-clients loop on one in-process broker: {@link dev.idem.bench.kafka.KafkaRunnerBenchmark}. */
@NullMarked
package dev.idem.bench.kafka;

import org.jspecify.annotations.NullMarked;
