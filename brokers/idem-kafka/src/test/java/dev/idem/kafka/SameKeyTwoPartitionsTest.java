package dev.idem.kafka;

import static dev.idem.kafka.KafkaFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Cause 4: the same logical message lands on two partitions (sent twice, by two producers or with another record key)
 * and two consumers of the group handle it at the same moment.
 */
class SameKeyTwoPartitionsTest {
    static KafkaFixture.Bank bank;

    @BeforeAll
    static void setUp() {
        bank = new KafkaFixture.Bank("SameKeyTwoPartitionsTest");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    @Test
    void sameKey_onTwoPartitions_handledAtOnce_unguardedDebitsTwice() throws Exception {
        assertThat(run(null, "unguarded").ledgerRows).isEqualTo(2);
    }

    @Test
    void sameKey_onTwoPartitions_handledAtOnce_guardedSecondIsInProgressThenDuplicate() throws Exception {
        try (Guard guard = Guard.of(InMemoryStore.create(), "twoparts-guarded")) {
            Result result = run(guard, "guarded");
            assertThat(result.ledgerRows).isEqualTo(1);
            assertThat(result.outcomes)
                    .containsOnlyOnce(Outcome.Type.PROCESSED)
                    .contains(Outcome.Type.IN_PROGRESS, Outcome.Type.DUPLICATE);
        }
    }

    private record Result(long ledgerRows, List<Outcome.Type> outcomes) {}

    private static Result run(Guard guard, String mode) throws Exception {
        String topic = KafkaFixture.topic("twoparts" + mode, 2);
        String group = topic + "-group";
        String account = topic + "-acc";
        bank.open(account, 1000);
        CountDownLatch bothArrived = new CountDownLatch(2);
        CountDownLatch otherSawInProgress = new CountDownLatch(1);
        List<Outcome.Type> outcomes = new CopyOnWriteArrayList<>();
        RecordHandler<String, String> handler = (key, record) -> {
            bothArrived.countDown();
            if (!bothArrived.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                throw new AssertionError("the two copies were not handled at the same time");
            }
            Outcome outcome;
            if (guard == null) {
                bank.debit(account, 100, key);
                outcome = Outcome.processed();
            } else {
                outcome = guard.run(key, () -> {
                    // Hold the claim until the other consumer has met it, so the race is real, not a lucky order.
                    if (!otherSawInProgress.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                        throw new AssertionError("the other consumer never met the claim");
                    }
                    bank.debit(account, 100, key);
                });
                if (outcome.type() == Outcome.Type.IN_PROGRESS) {
                    otherSawInProgress.countDown();
                }
            }
            outcomes.add(outcome.type());
            return outcome;
        };
        dev.idem.RetryPolicy fastRetry =
                new dev.idem.RetryPolicy(Duration.ofMillis(100), 1.0, Duration.ofMillis(100), 200, 0.0);
        try (var c1 = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(group))
                        .topics(topic)
                        .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                        .retryPolicy(fastRetry)
                        .handler(handler)
                        .build()
                        .start();
                var c2 = IdempotentKafkaConsumer.builder(KafkaFixture.consumerProps(group))
                        .topics(topic)
                        .keyFrom(KeyExtractor.header(KafkaProducers.KEY_HEADER))
                        .retryPolicy(fastRetry)
                        .handler(handler)
                        .build()
                        .start()) {
            await().atMost(WAIT)
                    .until(() -> c1.assignment().size() == 1 && c2.assignment().size() == 1);
            try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
                KafkaFixture.send(producer, topic, 0, "pay-1", account + ":100");
                KafkaFixture.send(producer, topic, 1, "pay-1", account + ":100");
            }
            KafkaFixture.awaitAllCommitted(group, topic);
        }
        return new Result(bank.ledgerRows(account), outcomes);
    }
}
