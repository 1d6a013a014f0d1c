package dev.idem.kafka;

import static dev.idem.kafka.KafkaFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import dev.idem.Task;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Cause 2: a consumer works longer than {@code max.poll.interval.ms}, the group gives its partition to another
 * consumer, and the record is handled a second time while the first handling still runs.
 */
class SlowConsumerDuplicateTest {
    static KafkaFixture.Bank bank;

    @BeforeAll
    static void setUp() {
        bank = new KafkaFixture.Bank("SlowConsumerDuplicateTest");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    @Test
    void slowConsumer_exceedsMaxPollInterval_unguardedSecondConsumerDebitsAgain() throws Exception {
        Result result = run(null, "unguarded");
        assertThat(result.ledgerRows).as("both consumers applied the debit").isEqualTo(2);
    }

    @Test
    void slowConsumer_exceedsMaxPollInterval_redeliveryWhileFirstInProgress_isRetriedThenDuplicate() throws Exception {
        try (Guard guard = Guard.of(InMemoryStore.create(), "slow-guarded")) {
            Result result = run(guard, "guarded");
            assertThat(result.ledgerRows).as("one debit").isEqualTo(1);
            assertThat(result.secondConsumerOutcomes)
                    .as("the redelivery met the first handling in progress, then found it done")
                    .startsWith(Outcome.Type.IN_PROGRESS)
                    .endsWith(Outcome.Type.DUPLICATE)
                    .doesNotContain(Outcome.Type.PROCESSED);
        }
    }

    private record Result(long ledgerRows, List<Outcome.Type> secondConsumerOutcomes) {}

    private static Result run(Guard guard, String mode) throws Exception {
        String topic = KafkaFixture.topic("slow" + mode, 1);
        String group = topic + "-group";
        String account = topic + "-acc";
        bank.open(account, 1000);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.send(producer, topic, 0, "pay-1", account + ":100");
        }
        CountDownLatch firstInEffect = new CountDownLatch(1);
        CountDownLatch redelivered = new CountDownLatch(1);
        List<Outcome.Type> outcomes = new CopyOnWriteArrayList<>();

        // The first consumer: a plain poll loop that works (without polling) until the redelivery happened.
        Map<String, Object> slowProps = new HashMap<>(KafkaFixture.consumerProps(group));
        slowProps.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 2000);
        slowProps.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        CompletableFuture<Void> slow = CompletableFuture.runAsync(() -> {
            try (KafkaConsumer<String, String> consumer =
                    new KafkaConsumer<>(slowProps, new StringDeserializer(), new StringDeserializer())) {
                consumer.subscribe(List.of(topic));
                List<ConsumerRecord<String, String>> got = new java.util.ArrayList<>();
                long deadline = System.nanoTime() + WAIT.toNanos();
                while (got.isEmpty() && System.nanoTime() < deadline) {
                    consumer.poll(Duration.ofMillis(100)).forEach(got::add);
                }
                ConsumerRecord<String, String> record = got.get(0);
                String key = KafkaFixture.header(record, KafkaProducers.KEY_HEADER);
                Task effect = () -> {
                    firstInEffect.countDown();
                    if (!redelivered.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                        throw new AssertionError("the record was never redelivered to the second consumer");
                    }
                    bank.debit(account, 100, key);
                };
                if (guard == null) {
                    effect.run();
                } else {
                    assertThat(guard.run(key, effect).type()).isEqualTo(Outcome.Type.PROCESSED);
                }
                TopicPartition tp = new TopicPartition(topic, 0);
                assertThatThrownBy(() -> consumer.commitSync(Map.of(tp, new OffsetAndMetadata(record.offset() + 1))))
                        .as("the slow consumer was removed from the group")
                        .isInstanceOf(CommitFailedException.class);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        await().atMost(WAIT).until(() -> firstInEffect.getCount() == 0 || slow.isDone());

        AtomicInteger deliveries = new AtomicInteger();
        try (var second = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(group))
                .topics(topic)
                .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                .retryPolicy(new dev.idem.RetryPolicy(Duration.ofMillis(100), 1.0, Duration.ofMillis(100), 200, 0.0))
                .handler((key, record) -> {
                    deliveries.incrementAndGet();
                    redelivered.countDown();
                    Outcome outcome;
                    if (guard == null) {
                        bank.debit(account, 100, key);
                        outcome = Outcome.processed();
                    } else {
                        outcome = guard.run(key, () -> bank.debit(account, 100, key));
                    }
                    outcomes.add(outcome.type());
                    return outcome;
                })
                .build()
                .start()) {
            KafkaFixture.join(slow);
            KafkaFixture.awaitAllCommitted(group, topic);
        }
        return new Result(bank.ledgerRows(account), outcomes);
    }
}
