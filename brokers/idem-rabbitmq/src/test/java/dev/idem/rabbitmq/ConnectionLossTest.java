package dev.idem.rabbitmq;

import static dev.idem.rabbitmq.RabbitFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.NoOpMetricsCollector;
import dev.idem.Guard;
import dev.idem.InMemoryStore;
import dev.idem.Outcome;
import dev.idem.RetryPolicy;
import dev.idem.testkit.TcpProxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Connections lost under the consumer: with automatic recovery the same consumer gets the unacked message again (and
 * the guard answers {@code DUPLICATE}); without, the consumer stops and says why. (A consumer that dies is
 * AdapterContract's crash case.)
 */
class ConnectionLossTest {

    /**
     * The handler applies the effect, then the proxy drops the connection before the handler returns: the ack is lost,
     * and the message comes back when the connection recovers; the delivery of the lost channel is not acked on the new
     * one.
     */
    @ParameterizedTest(name = "automatic recovery {0}")
    @ValueSource(booleans = {true, false})
    void connectionDroppedAfterTheEffect_beforeTheAck(boolean recovering) throws Exception {
        try (Guard guard = Guard.of(InMemoryStore.create(), "dropped");
                RabbitFixture.Queues queues = RabbitFixture.queues("dropped");
                TcpProxy proxy = TcpProxy.start(
                        RabbitFixture.uri().getHost(), RabbitFixture.uri().getPort())) {
            queues.publish("pay-1", "x");
            AtomicInteger effects = new AtomicInteger();
            List<Outcome.Type> outcomes = new CopyOnWriteArrayList<>();
            ConnectionFactory viaProxy = RabbitFixture.factory(proxy.port());
            viaProxy.setAutomaticRecoveryEnabled(recovering);
            Connection connection = RabbitFixture.connect(viaProxy);
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(RabbitFixture.FAST_RETRY)
                    .handler((key, message) -> {
                        Outcome outcome = guard.run(key, effects::incrementAndGet);
                        outcomes.add(outcome.type());
                        if (outcomes.size() == 1) {
                            proxy.dropAllConnections();
                            await().atMost(WAIT).until(() -> !connection.isOpen());
                        }
                        return outcome;
                    })
                    .build()
                    .start()) {
                if (recovering) {
                    await().atMost(WAIT).until(() -> outcomes.size() == 2 && queues.depth(queues.queue()) == 0);
                    assertThat(outcomes).containsExactly(Outcome.Type.PROCESSED, Outcome.Type.DUPLICATE);
                    assertThat(consumer.isRunning()).isTrue();
                } else {
                    await().atMost(WAIT).until(() -> !consumer.isRunning());
                    assertThat(consumer.failure()).get().asString().contains("does not recover");
                    await().atMost(WAIT).until(() -> queues.depth(queues.queue()) == 1);
                }
            } finally {
                connection.abort();
            }
            assertThat(effects).hasValue(1);
        }
    }

    /**
     * The connection drops while the handler runs, and the handler then answers {@code FAILED}: the retry copy cannot
     * be published on the lost channel. The channel must still come back with the connection (automatic recovery),
     * so the message, requeued by the broker, is handled again. (Aborting the closed channel to give the delivery
     * back also struck it from the connection's recovery: the consumer stayed "running" with no channel.)
     */
    @Test
    void connectionDroppedWhileAHandlerRuns_retryCopyNotPublished_channelComesBackWithTheConnection() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("droppedretry");
                TcpProxy proxy = TcpProxy.start(
                        RabbitFixture.uri().getHost(), RabbitFixture.uri().getPort())) {
            queues.publish("pay-1", "x");
            List<Boolean> redelivered = new CopyOnWriteArrayList<>();
            Connection connection = RabbitFixture.connect(RabbitFixture.factory(proxy.port()));
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(RabbitFixture.FAST_RETRY)
                    .handler((key, message) -> {
                        redelivered.add(message.getEnvelope().isRedeliver());
                        if (redelivered.size() == 1) {
                            proxy.dropAllConnections();
                            await().atMost(WAIT).until(() -> !connection.isOpen());
                            return Outcome.failed("payment service down", null);
                        }
                        return Outcome.processed();
                    })
                    .build()
                    .start()) {
                await().atMost(WAIT).until(() -> redelivered.size() == 2 && queues.depth(queues.queue()) == 0);
                assertThat(redelivered).containsExactly(false, true);
                assertThat(consumer.isRunning()).isTrue();
            } finally {
                connection.abort();
            }
        }
    }

    /**
     * The broker closes a channel (its dead letter went to a missing exchange) and, before the pause to reopen it ends,
     * the connection drops and recovers: automatic recovery brings the closed channel back with its consumer. The
     * reopen then finds it live and keeps it. (It aborted it, and the abort's own shutdown signal scheduled another
     * reopen, which aborted the next channel, and so on: a channel aborted every pause for ever, each abort sending the
     * message in hand back to the queue.)
     */
    @Test
    void channelClosedByTheBroker_thenRecoveredWithTheConnection_beforeItsReopen_isKept_notReopenedForEver()
            throws Exception {
        Duration reopenDelay = Duration.ofSeconds(3);
        try (RabbitFixture.Queues queues = RabbitFixture.queues("recoveredclosed");
                TcpProxy proxy = TcpProxy.start(
                        RabbitFixture.uri().getHost(), RabbitFixture.uri().getPort())) {
            AtomicInteger channelsOpened = new AtomicInteger();
            ConnectionFactory viaProxy = RabbitFixture.factory(proxy.port());
            viaProxy.setMetricsCollector(new NoOpMetricsCollector() {
                @Override
                public void newChannel(Channel channel) {
                    channelsOpened.incrementAndGet();
                }
            });
            Connection connection = RabbitFixture.connect(viaProxy);
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(RetryPolicy.builder()
                            .initialDelay(reopenDelay)
                            .maxDelay(reopenDelay)
                            .build())
                    .handler((key, message) -> Outcome.rejected("amount is negative"))
                    .build()
                    .start()) {
                try (Channel admin = queues.admin.createChannel()) {
                    admin.exchangeDelete(queues.topology.deadLetterExchange());
                }
                queues.publish("bad-1", "x");
                // the dead letter closed the channel (404), the delivery is back in the queue, the reopen is pending
                await().atMost(WAIT).until(() -> queues.depth(queues.queue()) == 1);
                try (Channel admin = queues.admin.createChannel()) {
                    queues.topology.declare(admin);
                }
                proxy.dropAllConnections();
                await().atMost(WAIT).until(() -> queues.depth(queues.topology.deadLetterQueue()) == 1);
                int afterRecovery = channelsOpened.get();
                await().during(reopenDelay.multipliedBy(2))
                        .atMost(WAIT)
                        .until(() -> channelsOpened.get() == afterRecovery);
                assertThat(consumer.isRunning()).isTrue();
            } finally {
                connection.abort();
            }
        }
    }

    /**
     * The proxy swallows the broker's answers from the first delivery on: the retry copy is not confirmed, so the
     * channel is aborted and to be reopened; meanwhile the connection dies of missed heartbeats. Without automatic
     * recovery nothing will reopen it.
     */
    @Test
    void connectionLostWhileAChannelIsReopened_withoutRecovery_stopsWithTheCause() throws Exception {
        try (RabbitFixture.Queues queues = RabbitFixture.queues("lostreopen");
                TcpProxy proxy = TcpProxy.start(
                        RabbitFixture.uri().getHost(), RabbitFixture.uri().getPort())) {
            queues.publish("m-1", "x");
            ConnectionFactory viaProxy = RabbitFixture.factory(proxy.port());
            viaProxy.setAutomaticRecoveryEnabled(false);
            viaProxy.setRequestedHeartbeat(1);
            viaProxy.setChannelRpcTimeout(1000);
            Connection connection = RabbitFixture.connect(viaProxy);
            try (var consumer = IdempotentRabbitConsumer.builder(connection, queues.topology)
                    .retryPolicy(RabbitFixture.FAST_RETRY)
                    .confirmTimeout(Duration.ofMillis(300))
                    .handler((key, message) -> {
                        proxy.blackholeExisting();
                        return Outcome.failed("payment service down", null);
                    })
                    .build()
                    .start()) {
                await().atMost(WAIT).until(() -> !connection.isOpen());
                await().atMost(Duration.ofSeconds(20)).until(() -> !consumer.isRunning());
                assertThat(consumer.failure()).get().asString().contains("does not recover");
            } finally {
                connection.abort();
            }
        }
    }
}
