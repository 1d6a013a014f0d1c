package dev.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.DeadLetterException;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.api.Test;

/** How the runner treats outcomes that are not final: ordered retries, a bound, and dead letters. */
class RetryAndDeadLetterTest {
    private static final RetryPolicy THREE_FAST = RetryPolicy.builder()
            .initialDelay(Duration.ofMillis(50))
            .multiplier(1.0)
            .maxDelay(Duration.ofMillis(50))
            .maxAttempts(3)
            .jitter(0.0)
            .build();

    /** What a consumer saw, in order, and what it dead-lettered. */
    private record Run(List<String> seen, List<ConsumerRecord<byte[], byte[]>> deadLetters) {
        String deadLetterHeader(String name) {
            assertThat(deadLetters).hasSize(1);
            return KafkaFixture.header(deadLetters.get(0), name);
        }
    }

    /** Produces the keys in order on one partition and consumes them until all are committed. */
    private static Run consume(String name, RecordHandler<String, String> handler, String... keys) throws Exception {
        String topic = KafkaFixture.topic(name, 1);
        String group = topic + "-group";
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            for (String key : keys) {
                KafkaFixture.send(producer, topic, 0, key, "value of " + key);
            }
        }
        List<String> seen = new CopyOnWriteArrayList<>();
        try (var consumer = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(group))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .retryPolicy(THREE_FAST)
                .handler((key, record) -> {
                    seen.add(key);
                    return handler.handle(key, record);
                })
                .build()
                .start()) {
            KafkaFixture.awaitAllCommitted(group, topic);
        }
        return new Run(seen, KafkaFixture.readAll(topic + "-dlt"));
    }

    @Test
    void failingRecord_isRetriedBeforeLaterRecords_thenDeadLetteredAfterTheBound() throws Exception {
        Run run = consume(
                "retrybound",
                (key, record) -> {
                    if (key.equals("bad")) {
                        throw new IllegalStateException("downstream unavailable");
                    }
                    return Outcome.processed();
                },
                "bad",
                "good");

        assertThat(run.seen())
                .as("partition order kept through the retries")
                .containsExactly("bad", "bad", "bad", "good");
        assertThat(run.deadLetterHeader(IdempotentKafkaConsumer.DLT_OUTCOME)).isEqualTo("FAILED");
        assertThat(run.deadLetterHeader(IdempotentKafkaConsumer.DLT_ATTEMPTS)).isEqualTo("3");
        assertThat(run.deadLetterHeader(IdempotentKafkaConsumer.DLT_REASON))
                .contains("gave up after 3 attempts", "downstream unavailable");
    }

    @Test
    void rejectedOutcome_isDeadLetteredAtOnce_withItsReason() throws Exception {
        Run run = consume(
                "rejected",
                (key, record) -> {
                    if (key.equals("10086:PAY")) {
                        throw new DeadLetterException("order 10086 is CANCELLED: PAY is not allowed", null);
                    }
                    return Outcome.processed();
                },
                "10086:PAY",
                "10087:PAY");

        assertThat(run.seen()).containsExactly("10086:PAY", "10087:PAY");
        assertThat(run.deadLetterHeader(IdempotentKafkaConsumer.DLT_OUTCOME)).isEqualTo("REJECTED");
        assertThat(run.deadLetterHeader(IdempotentKafkaConsumer.DLT_ATTEMPTS)).isEqualTo("1");
        assertThat(run.deadLetterHeader(IdempotentKafkaConsumer.DLT_REASON))
                .isEqualTo("order 10086 is CANCELLED: PAY is not allowed");
    }
}
