package dev.idem.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Which outcomes count toward the attempt bound, and which clock times the backoff. */
class RetryRulesTest {
    private static final RetryPolicy THREE_FAST = RetryPolicy.builder()
            .initialDelay(Duration.ofMillis(20))
            .multiplier(2.0)
            .maxDelay(Duration.ofMillis(80))
            .maxAttempts(3)
            .jitter(0.0)
            .build();

    /** The failures that are the handler's own still end in the dead-letter topic after the bound. */
    @ParameterizedTest
    @ValueSource(strings = {"classic", "consumer"})
    void failed_isDeadLetteredAfterTheBound_evenAfterInProgressWaits(String protocol) throws Exception {
        String topic = KafkaFixture.topic("failedbound", 1);
        String group = topic + "-g";
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.send(producer, topic, 0, "pay-1", "v");
        }
        AtomicInteger calls = new AtomicInteger();
        try (var consumer = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(group, protocol))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .retryPolicy(THREE_FAST)
                .handler((key, record) -> calls.incrementAndGet() <= 5
                        ? Outcome.inProgress("held elsewhere", null)
                        : Outcome.failed("downstream 503", null))
                .build()
                .start()) {
            KafkaFixture.awaitAllCommitted(group, topic);
        }
        var dead = KafkaFixture.readAll(topic + "-dlt");
        assertThat(dead).hasSize(1);
        assertThat(KafkaFixture.header(dead.get(0), IdempotentKafkaConsumer.DLT_REASON))
                .contains("gave up after 3 attempts", "downstream 503");
        assertThat(calls.get()).isEqualTo(5 + 3);
    }

    /**
     * Issue 14 item 5: backoffs were timed by the wall clock, so a clock step back stalled retries by its size. They are
     * timed by the monotonic clock the builder is given: a one-hour backoff ends when that clock says so.
     */
    @ParameterizedTest
    @ValueSource(strings = {"classic", "consumer"})
    void backoff_isTimedByTheInjectedMonotonicClock(String protocol) throws Exception {
        String topic = KafkaFixture.topic("monotonic", 1);
        String group = topic + "-g";
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.send(producer, topic, 0, "pay-1", "v");
        }
        AtomicLong skew = new AtomicLong();
        AtomicInteger calls = new AtomicInteger();
        RetryPolicy hourly = RetryPolicy.builder()
                .initialDelay(Duration.ofHours(1))
                .multiplier(1.0)
                .maxDelay(Duration.ofHours(1))
                .maxAttempts(5)
                .jitter(0.0)
                .build();
        try (var consumer = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(group, protocol))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .retryPolicy(hourly)
                .nanoTime(() -> System.nanoTime() + skew.get())
                .handler((key, record) -> calls.incrementAndGet() == 1
                        ? Outcome.failed("first attempt fails", null)
                        : Outcome.processed())
                .build()
                .start()) {
            await().atMost(KafkaFixture.WAIT).until(() -> calls.get() == 1);
            // The runner reads the clock for the retry's due time after the handler returned: an hour passes on the
            // injected clock at each look until the retry ran (once, seconds of real time), never on the real one.
            await().atMost(KafkaFixture.WAIT).until(() -> {
                skew.addAndGet(Duration.ofHours(1).toNanos());
                return calls.get() == 2;
            });
            KafkaFixture.awaitAllCommitted(group, topic);
        }
        assertThat(calls.get()).isEqualTo(2);
    }

    @org.junit.jupiter.api.Test
    void listener_hearsRetriesDeadLettersAndCommits_fromSourceKafka_withTheAttempt() throws Exception {
        String topic = KafkaFixture.topic("events", 1);
        String group = topic + "-g";
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.send(producer, topic, 0, "pay-1", "v");
        }
        java.util.List<dev.idem.IdempotencyEvent> events = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (var consumer = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(group))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .retryPolicy(THREE_FAST)
                .listener(events::add)
                .handler((key, record) -> Outcome.failed("downstream 503", null))
                .build()
                .start()) {
            KafkaFixture.awaitAllCommitted(group, topic);
            await().atMost(KafkaFixture.WAIT)
                    .until(() -> events.stream().anyMatch(e -> e.type() == dev.idem.IdempotencyEvent.Type.COMMITTED));
        }
        assertThat(events)
                .allMatch(e -> e.source().equals("kafka") && e.namespace().equals(group));
        assertThat(events.stream()
                        .filter(e -> e.type() == dev.idem.IdempotencyEvent.Type.RETRY_SCHEDULED)
                        .map(dev.idem.IdempotencyEvent::attempt))
                .containsExactly(1, 2);
        assertThat(events.stream().filter(e -> e.type() == dev.idem.IdempotencyEvent.Type.DEAD_LETTERED))
                .singleElement()
                .satisfies(e -> {
                    assertThat(e.attempt()).isEqualTo(3);
                    assertThat(e.keyLogId()).isNotEmpty().doesNotContain("pay-1");
                });
    }
}
