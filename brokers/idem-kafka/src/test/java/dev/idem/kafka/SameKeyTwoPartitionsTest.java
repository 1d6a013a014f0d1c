package dev.idem.kafka;

import static dev.idem.kafka.KafkaFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import dev.idem.testsupport.DebitGuard;
import dev.idem.testsupport.PaymentBank;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Cause 4: the same logical message lands on two partitions (sent twice, by two producers or with another record key)
 * and two consumers of the group handle it at the same moment: the copy that holds the key waits until the other has
 * met it, so the race is real, not a lucky order.
 */
class SameKeyTwoPartitionsTest {
    static PaymentBank bank;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("SameKeyTwoPartitionsTest");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    @Test
    void sameKey_onTwoPartitions_handledAtOnce_unguardedDebitsTwice() throws Exception {
        try (DebitGuard unguarded = DebitGuard.unguarded(bank)) {
            assertThat(run(unguarded, "unguarded").ledgerRows).isEqualTo(2);
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(GuardKind.class)
    void sameKey_onTwoPartitions_handledAtOnce_secondMeetsTheFirstThenIsDuplicate(GuardKind kind) throws Exception {
        try (DebitGuard guard = kind.open(bank, "twoparts-" + kind)) {
            Result result = run(guard, kind.name());
            assertThat(result.ledgerRows).as(kind + ": one debit").isEqualTo(1);
            assertThat(guard.contentions())
                    .as("one copy met the other while it held the key")
                    .isPositive();
            assertThat(result.outcomes).containsOnlyOnce(Outcome.Type.PROCESSED).contains(Outcome.Type.DUPLICATE);
        }
    }

    private record Result(long ledgerRows, List<Outcome.Type> outcomes) {}

    private static Result run(DebitGuard guard, String mode) throws Exception {
        String topic = KafkaFixture.topic("twoparts" + mode, 2);
        String group = topic + "-group";
        String account = topic + "-acc";
        bank.open(account, 1000);
        List<Outcome.Type> outcomes = new CopyOnWriteArrayList<>();
        RecordHandler<String, String> handler = (key, record) -> {
            Outcome outcome = guard.debit(key, account, 100, DebitGuard.Claim::awaitContender);
            outcomes.add(outcome.type());
            return outcome;
        };
        try (var c1 = KafkaFixture.consumer(group, topic)
                        .handler(handler)
                        .build()
                        .start();
                var c2 = KafkaFixture.consumer(group, topic)
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
