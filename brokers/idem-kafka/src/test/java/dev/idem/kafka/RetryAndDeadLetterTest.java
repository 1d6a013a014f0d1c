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
    private static final RetryPolicy THREE_FAST =
            new RetryPolicy(Duration.ofMillis(50), 1.0, Duration.ofMillis(50), 3, 0.0);

    @Test
    void failingRecord_isRetriedBeforeLaterRecords_thenDeadLetteredAfterTheBound() throws Exception {
        String topic = KafkaFixture.topic("retrybound", 1);
        String group = topic + "-group";
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.send(producer, topic, 0, "bad", "x");
            KafkaFixture.send(producer, topic, 0, "good", "y");
        }
        List<String> seen = new CopyOnWriteArrayList<>();
        try (var consumer = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(group))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .retryPolicy(THREE_FAST)
                .handler((key, record) -> {
                    seen.add(key);
                    if (key.equals("bad")) {
                        throw new IllegalStateException("downstream unavailable");
                    }
                    return Outcome.processed();
                })
                .build()
                .start()) {
            KafkaFixture.awaitAllCommitted(group, topic);
        }

        assertThat(seen).as("partition order kept through the retries").containsExactly("bad", "bad", "bad", "good");
        List<ConsumerRecord<byte[], byte[]>> dead = KafkaFixture.readAll(topic + "-dlt");
        assertThat(dead).hasSize(1);
        assertThat(KafkaFixture.header(dead.get(0), IdempotentKafkaConsumer.DLT_OUTCOME))
                .isEqualTo("FAILED");
        assertThat(KafkaFixture.header(dead.get(0), IdempotentKafkaConsumer.DLT_ATTEMPTS))
                .isEqualTo("3");
        assertThat(KafkaFixture.header(dead.get(0), IdempotentKafkaConsumer.DLT_REASON))
                .contains("gave up after 3 attempts", "downstream unavailable");
    }

    @Test
    void rejectedOutcome_isDeadLetteredAtOnce_withItsReason() throws Exception {
        String topic = KafkaFixture.topic("rejected", 1);
        String group = topic + "-group";
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.send(producer, topic, 0, "10086:PAY", "pay a cancelled order");
            KafkaFixture.send(producer, topic, 0, "10087:PAY", "pay");
        }
        List<String> seen = new CopyOnWriteArrayList<>();
        try (var consumer = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(group))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .retryPolicy(THREE_FAST)
                .handler((key, record) -> {
                    seen.add(key);
                    if (key.equals("10086:PAY")) {
                        throw new DeadLetterException("order 10086 is CANCELLED: PAY is not allowed", null);
                    }
                    return Outcome.processed();
                })
                .build()
                .start()) {
            KafkaFixture.awaitAllCommitted(group, topic);
        }

        assertThat(seen).containsExactly("10086:PAY", "10087:PAY");
        List<ConsumerRecord<byte[], byte[]>> dead = KafkaFixture.readAll(topic + "-dlt");
        assertThat(dead).hasSize(1);
        assertThat(KafkaFixture.header(dead.get(0), IdempotentKafkaConsumer.DLT_OUTCOME))
                .isEqualTo("REJECTED");
        assertThat(KafkaFixture.header(dead.get(0), IdempotentKafkaConsumer.DLT_ATTEMPTS))
                .isEqualTo("1");
        assertThat(KafkaFixture.header(dead.get(0), IdempotentKafkaConsumer.DLT_REASON))
                .isEqualTo("order 10086 is CANCELLED: PAY is not allowed");
    }
}
