package dev.idem.rabbitmq;

import static dev.idem.rabbitmq.RabbitFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.idem.Outcome;
import dev.idem.testkit.TcpProxy;
import dev.idem.testsupport.DebitGuard;
import dev.idem.testsupport.PaymentBank;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Cause 3: the consumer's connection drops after the database commit and before the ack; the broker requeues the
 * unacked delivery and hands it out again ({@code redelivered=true}).
 */
class ConnectionDropBeforeAckTest {
    static PaymentBank bank;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("ConnectionDropBeforeAckTest");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    @Test
    void connectionDropsAfterDbCommit_beforeAck_unguardedRedeliveryDebitsAgain() throws Exception {
        try (DebitGuard unguarded = DebitGuard.unguarded(bank)) {
            assertThat(run(unguarded, "unguarded", false).ledgerRows).isEqualTo(2);
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(GuardKind.class)
    void connectionDropsAfterDbCommit_beforeAck_guardedRedeliveryIsDuplicate(GuardKind kind) throws Exception {
        try (DebitGuard guard = kind.open(bank, "drop-" + kind)) {
            Result result = run(guard, kind.name(), false);
            assertThat(result.ledgerRows).as(kind + ": one debit").isEqualTo(1);
            assertThat(result.outcomes).containsExactly(Outcome.Type.PROCESSED, Outcome.Type.DUPLICATE);
            assertThat(result.redelivered).containsExactly(false, true);
        }
    }

    @Test
    void connectionDropsAfterDbCommit_recoveringConnection_sameConsumerGetsItAgain_andAnswersDuplicate()
            throws Exception {
        try (DebitGuard guard = GuardKind.LEASE.open(bank, "drop-recover")) {
            Result result = run(guard, "recover", true);
            assertThat(result.ledgerRows).isEqualTo(1);
            assertThat(result.outcomes).containsExactly(Outcome.Type.PROCESSED, Outcome.Type.DUPLICATE);
        }
    }

    private record Result(long ledgerRows, List<Outcome.Type> outcomes, List<Boolean> redelivered) {}

    /**
     * The first consumer connects through a proxy; its handler debits, then the proxy drops the connection before the
     * handler returns. With {@code recovering}, the same consumer's connection recovers and gets the message again;
     * without, a second consumer on a direct connection does.
     */
    private static Result run(DebitGuard guard, String mode, boolean recovering) throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("drop" + mode);
                TcpProxy proxy = TcpProxy.start(
                        RabbitFixture.uri().getHost(), RabbitFixture.uri().getPort())) {
            String account = queues.queue() + "-acc";
            bank.open(account, 1000);
            queues.publish("pay-1", account + ":100");
            List<Outcome.Type> outcomes = new CopyOnWriteArrayList<>();
            List<Boolean> redelivered = new CopyOnWriteArrayList<>();
            AtomicBoolean dropNext = new AtomicBoolean(true);
            ConnectionFactory viaProxy = RabbitFixture.factory(proxy.port());
            viaProxy.setAutomaticRecoveryEnabled(recovering);
            Connection first = RabbitFixture.connect(viaProxy);
            try {
                MessageHandler handler = (key, message) -> {
                    Outcome outcome = guard.debit(key, account, 100);
                    outcomes.add(outcome.type());
                    redelivered.add(message.getEnvelope().isRedeliver());
                    if (dropNext.getAndSet(false)) {
                        proxy.dropAllConnections();
                        await().atMost(WAIT).until(() -> !first.isOpen());
                    }
                    return outcome;
                };
                try (var consumer = IdempotentRabbitConsumer.builder(first, queues.topology)
                        .retryPolicy(RabbitFixture.FAST_RETRY)
                        .handler(handler)
                        .build()
                        .start()) {
                    if (recovering) {
                        await().atMost(WAIT).until(() -> outcomes.size() == 2 && queues.depth(queues.queue()) == 0);
                        assertThat(consumer.isRunning()).isTrue();
                    } else {
                        await().atMost(WAIT).until(() -> !consumer.isRunning());
                        assertThat(consumer.failure()).get().asString().contains("does not recover");
                        assertThat(bank.ledgerRows(account)).isEqualTo(1);
                        try (Connection second = RabbitFixture.connect();
                                var next = IdempotentRabbitConsumer.builder(second, queues.topology)
                                        .retryPolicy(RabbitFixture.FAST_RETRY)
                                        .handler(handler)
                                        .build()
                                        .start()) {
                            await().atMost(WAIT).until(() -> outcomes.size() == 2 && queues.depth(queues.queue()) == 0);
                        }
                    }
                }
            } finally {
                first.abort();
            }
            return new Result(bank.ledgerRows(account), outcomes, redelivered);
        }
    }
}
