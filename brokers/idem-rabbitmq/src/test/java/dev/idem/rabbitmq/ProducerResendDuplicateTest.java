package dev.idem.rabbitmq;

import static dev.idem.rabbitmq.RabbitFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Connection;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.testkit.TcpProxy;
import dev.idem.testsupport.DebitGuard;
import dev.idem.testsupport.PaymentBank;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Cause 1: the broker stored the message but its confirm was lost (the proxy swallows the broker's answers); the
 * publisher does not know, publishes the same message again on a new connection, and the queue holds it twice. Both
 * copies carry the message id the publisher fixed before the first publish.
 */
class ProducerResendDuplicateTest {
    static PaymentBank bank;

    @BeforeAll
    static void setUp() {
        bank = new PaymentBank("ProducerResendDuplicateTest");
    }

    @AfterAll
    static void tearDown() {
        bank.close();
    }

    @Test
    void lostConfirm_publisherResends_unguardedConsumerDebitsTwice() throws Exception {
        try (DebitGuard unguarded = DebitGuard.unguarded(bank)) {
            assertThat(run(unguarded, "unguarded").ledgerRows).isEqualTo(2);
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(GuardKind.class)
    void lostConfirm_publisherResends_guardedConsumerDebitsOnce(GuardKind kind) throws Exception {
        try (DebitGuard guard = kind.open(bank, "resend-" + kind)) {
            Result result = run(guard, kind.name());
            assertThat(result.ledgerRows).as(kind + ": one debit").isEqualTo(1);
            assertThat(result.outcomes).containsExactly(Outcome.Type.PROCESSED, Outcome.Type.DUPLICATE);
        }
    }

    private record Result(long ledgerRows, List<Outcome.Type> outcomes) {}

    private static Result run(DebitGuard guard, String mode) throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("resend" + mode);
                TcpProxy proxy = TcpProxy.start(
                        RabbitFixture.uri().getHost(), RabbitFixture.uri().getPort())) {
            String account = queues.queue() + "-acc";
            bank.open(account, 1000);
            RetryPolicy twoAttempts = RetryPolicy.builder()
                    .initialDelay(Duration.ofMillis(50))
                    .multiplier(1.0)
                    .maxDelay(Duration.ofMillis(50))
                    .maxAttempts(2)
                    .jitter(0.0)
                    .build();
            try (RabbitPublisher publisher = RabbitPublisher.builder(RabbitFixture.factory(proxy.port()))
                    .confirmTimeout(Duration.ofSeconds(1))
                    .retryPolicy(twoAttempts)
                    .build()) {
                publisher.publish("", queues.queue(), "warm-up", "warm-up".getBytes(StandardCharsets.UTF_8));
                queues.drain(queues.queue());
                proxy.blackholeExisting();
                publisher.publish("", queues.queue(), "pay-1", (account + ":100").getBytes(StandardCharsets.UTF_8));
            }
            assertThat(queues.depth(queues.queue()))
                    .as("the lost confirm left two copies")
                    .isEqualTo(2);

            List<Outcome.Type> outcomes = new CopyOnWriteArrayList<>();
            try (Connection connection = RabbitFixture.connect();
                    var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                            .retryPolicy(RabbitFixture.FAST_RETRY)
                            .handler((key, message) -> {
                                Outcome outcome = guard.debit(key, account, 100);
                                outcomes.add(outcome.type());
                                return outcome;
                            })
                            .build()
                            .start()) {
                await().atMost(WAIT).until(() -> outcomes.size() == 2 && queues.depth(queues.queue()) == 0);
            }
            return new Result(bank.ledgerRows(account), outcomes);
        }
    }
}
