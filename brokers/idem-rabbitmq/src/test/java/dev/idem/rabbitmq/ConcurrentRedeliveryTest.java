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
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Cause 2 and the concurrent duplicate: the first consumer is still working when the network cuts it off (the proxy
 * swallows both directions, the sockets stay open); the broker misses its heartbeats, closes the connection, requeues
 * the unacked delivery and hands it to a second consumer while the first one still runs. The first handling holds the
 * key until the redelivery has met it (lease: found it IN_PROGRESS and went through the retry queue; inbox: waits on
 * the uncommitted mark).
 */
class ConcurrentRedeliveryTest {
    static PaymentBank bank;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("ConcurrentRedeliveryTest");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    @Test
    void firstConsumerCutOffWhileWorking_unguardedSecondConsumerDebitsConcurrently() throws Exception {
        try (DebitGuard unguarded = DebitGuard.unguarded(bank)) {
            Result result = run(unguarded, "unguarded");
            assertThat(result.ledgerRows).as("both consumers applied the debit").isEqualTo(2);
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(GuardKind.class)
    void firstConsumerCutOffWhileWorking_redeliveryMeetsFirstHoldingTheKey_isDuplicate(GuardKind kind)
            throws Exception {
        try (DebitGuard guard = kind.open(bank, "cutoff-" + kind)) {
            Result result = run(guard, kind.name());
            assertThat(result.ledgerRows).as(kind + ": one debit").isEqualTo(1);
            assertThat(guard.contentions())
                    .as("the redelivery met the first handling while it held the key")
                    .isPositive();
            assertThat(result.secondOutcomes)
                    .as("the redelivery waited (retry queue or row lock) until the first handling finished")
                    .endsWith(Outcome.Type.DUPLICATE)
                    .doesNotContain(Outcome.Type.PROCESSED);
            assertThat(result.firstOutcome).isEqualTo(Outcome.Type.PROCESSED);
        }
    }

    private record Result(long ledgerRows, Outcome.Type firstOutcome, List<Outcome.Type> secondOutcomes) {}

    private static Result run(DebitGuard guard, String mode) throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("cutoff" + mode);
                TcpProxy proxy = TcpProxy.start(
                        RabbitFixture.uri().getHost(), RabbitFixture.uri().getPort())) {
            String account = queues.queue() + "-acc";
            bank.open(account, 1000);
            queues.publish("pay-1", account + ":100");
            CountDownLatch firstInEffect = new CountDownLatch(1);
            CountDownLatch firstDone = new CountDownLatch(1);
            AtomicReference<Outcome.Type> firstOutcome = new AtomicReference<>();
            List<Outcome.Type> secondOutcomes = new CopyOnWriteArrayList<>();
            List<Boolean> secondRedelivered = new CopyOnWriteArrayList<>();

            ConnectionFactory viaProxy = RabbitFixture.factory(proxy.port());
            viaProxy.setRequestedHeartbeat(2);
            viaProxy.setAutomaticRecoveryEnabled(false);
            Connection first = RabbitFixture.connect(viaProxy);
            try (var slow = IdempotentRabbitConsumer.builder(first, queues.topology)
                    .retryPolicy(RabbitFixture.FAST_RETRY)
                    .handler((key, message) -> {
                        Outcome outcome = guard.debit(key, account, 100, claim -> {
                            firstInEffect.countDown();
                            claim.awaitContender();
                        });
                        firstOutcome.set(outcome.type());
                        firstDone.countDown();
                        return outcome;
                    })
                    .build()
                    .start()) {
                await().atMost(WAIT).until(() -> firstInEffect.getCount() == 0);
                proxy.partitionExisting();
                try (Connection direct = RabbitFixture.connect();
                        var second = IdempotentRabbitConsumer.builder(direct, queues.topology)
                                .retryPolicy(RabbitFixture.FAST_RETRY)
                                .handler((key, message) -> {
                                    secondRedelivered.add(message.getEnvelope().isRedeliver());
                                    Outcome outcome = guard.debit(key, account, 100);
                                    secondOutcomes.add(outcome.type());
                                    return outcome;
                                })
                                .build()
                                .start()) {
                    await().atMost(WAIT).until(() -> firstDone.getCount() == 0);
                    await().atMost(WAIT)
                            .until(() -> !secondOutcomes.isEmpty()
                                    && secondOutcomes
                                                    .get(secondOutcomes.size() - 1)
                                                    .action()
                                            == Outcome.Action.ACK
                                    && queues.depth(queues.queue()) == 0
                                    && queues.depth(queues.topology.retryQueue()) == 0);
                }
            } finally {
                first.abort();
            }
            assertThat(secondRedelivered)
                    .first()
                    .as("the broker redelivered it")
                    .isEqualTo(true);
            return new Result(bank.ledgerRows(account), firstOutcome.get(), secondOutcomes);
        }
    }
}
