package dev.idem.kafka;

import static dev.idem.kafka.KafkaFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import dev.idem.testsupport.DebitGuard;
import dev.idem.testsupport.PaymentBank;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Cause 2: a consumer works longer than {@code max.poll.interval.ms}, the group gives its partition to another
 * consumer, and the record is handled a second time while the first handling still runs. The first handling holds the
 * key until the redelivery has met it (lease: found it IN_PROGRESS; inbox: waits on the uncommitted mark).
 */
class SlowConsumerDuplicateTest {
    static PaymentBank bank;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("SlowConsumerDuplicateTest");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    @Test
    void slowConsumer_exceedsMaxPollInterval_unguardedSecondConsumerDebitsAgain() throws Exception {
        try (DebitGuard unguarded = DebitGuard.unguarded(bank)) {
            assertThat(run(unguarded, "unguarded").ledgerRows)
                    .as("both consumers applied the debit")
                    .isEqualTo(2);
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(GuardKind.class)
    void slowConsumer_exceedsMaxPollInterval_redeliveryMeetsFirstHoldingTheKey_isDuplicate(GuardKind kind)
            throws Exception {
        try (DebitGuard guard = kind.open(bank, "slow-" + kind)) {
            Result result = run(guard, kind.name());
            assertThat(result.ledgerRows).as(kind + ": one debit").isEqualTo(1);
            assertThat(guard.contentions())
                    .as("the redelivery met the first handling while it held the key")
                    .isPositive();
            assertThat(result.secondConsumerOutcomes)
                    .as("the redelivery was retried until the first handling committed, then found it done")
                    .endsWith(Outcome.Type.DUPLICATE)
                    .doesNotContain(Outcome.Type.PROCESSED);
        }
    }

    private record Result(long ledgerRows, List<Outcome.Type> secondConsumerOutcomes) {}

    private static Result run(DebitGuard guard, String mode) throws Exception {
        String topic = KafkaFixture.topic("slow" + mode, 1);
        String group = topic + "-group";
        String account = topic + "-acc";
        bank.open(account, 1000);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.send(producer, topic, 0, "pay-1", account + ":100");
        }
        CountDownLatch firstInEffect = new CountDownLatch(1);
        List<Outcome.Type> outcomes = new CopyOnWriteArrayList<>();

        // The first consumer: a plain poll loop that works (without polling) until the redelivery has met it.
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
                Outcome outcome = guard.debit(key, account, 100, claim -> {
                    firstInEffect.countDown();
                    claim.awaitContender();
                });
                assertThat(outcome.type()).isEqualTo(Outcome.Type.PROCESSED);
                TopicPartition tp = new TopicPartition(topic, 0);
                assertThatThrownBy(() -> consumer.commitSync(Map.of(tp, new OffsetAndMetadata(record.offset() + 1))))
                        .as("the slow consumer was removed from the group")
                        .isInstanceOf(CommitFailedException.class);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        await().atMost(WAIT).until(() -> firstInEffect.getCount() == 0 || slow.isDone());

        try (var second = KafkaFixture.consumer(group, topic)
                .handler((key, record) -> {
                    Outcome outcome = guard.debit(key, account, 100);
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
