package dev.idem.kafka;

import static dev.idem.kafka.KafkaFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.Outcome;
import dev.idem.testsupport.DebitGuard;
import dev.idem.testsupport.PaymentBank;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Cause 3: the consumer dies after the database commit and before the offset commit; on restart the record is
 * delivered again. The crash is an {@link Error} thrown by the handler after the effect, which stops the runner at
 * once without committing.
 */
class CrashBeforeCommitTest {
    static PaymentBank bank;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("CrashBeforeCommitTest");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    /** Stands for the process dying: not an exception a handler would catch. */
    static final class SimulatedCrash extends Error {
        private static final long serialVersionUID = 1L;

        SimulatedCrash() {
            super("simulated crash after the database commit, before the offset commit");
        }
    }

    @Test
    void crashAfterDbCommit_beforeOffsetCommit_unguardedRestartDebitsAgain() throws Exception {
        try (DebitGuard unguarded = DebitGuard.unguarded(bank)) {
            assertThat(run(unguarded, "unguarded").ledgerRows).isEqualTo(2);
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(GuardKind.class)
    void crashAfterDbCommit_beforeOffsetCommit_guardedRestartAnswersDuplicate(GuardKind kind) throws Exception {
        try (DebitGuard guard = kind.open(bank, "crash-" + kind)) {
            Result result = run(guard, kind.name());
            assertThat(result.ledgerRows).as(kind + ": one debit").isEqualTo(1);
            assertThat(result.outcomes).containsExactly(Outcome.Type.PROCESSED, Outcome.Type.DUPLICATE);
        }
    }

    private record Result(long ledgerRows, List<Outcome.Type> outcomes) {}

    private static Result run(DebitGuard guard, String mode) throws Exception {
        String topic = KafkaFixture.topic("crash" + mode, 1);
        String group = topic + "-group";
        String account = topic + "-acc";
        bank.open(account, 1000);
        try (KafkaProducer<String, String> producer = KafkaFixture.producer()) {
            KafkaFixture.send(producer, topic, 0, "pay-1", account + ":100");
        }
        List<Outcome.Type> outcomes = new CopyOnWriteArrayList<>();
        AtomicBoolean crashNext = new AtomicBoolean(true);
        RecordHandler<String, String> handler = (key, record) -> {
            Outcome outcome = guard.debit(key, account, 100);
            outcomes.add(outcome.type());
            if (crashNext.getAndSet(false)) {
                throw new SimulatedCrash();
            }
            return outcome;
        };

        var first = KafkaFixture.consumer(group, topic).handler(handler).build().start();
        await().atMost(WAIT).until(() -> !first.isRunning());
        assertThat(first.failure()).containsInstanceOf(SimulatedCrash.class);
        assertThat(KafkaFixture.committed(group))
                .as("nothing committed by the crashed consumer")
                .isEmpty();
        assertThat(bank.ledgerRows(account)).isEqualTo(1);

        try (var restarted =
                KafkaFixture.consumer(group, topic).handler(handler).build().start()) {
            KafkaFixture.awaitAllCommitted(group, topic);
        }
        return new Result(bank.ledgerRows(account), outcomes);
    }
}
