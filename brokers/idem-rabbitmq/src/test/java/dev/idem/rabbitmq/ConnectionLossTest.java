package dev.idem.rabbitmq;

import static dev.idem.rabbitmq.RabbitFixture.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.idem.Outcome;
import dev.idem.testkit.TcpProxy;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** A connection lost for good while a channel was being reopened: the consumer stops and says why. */
class ConnectionLossTest {

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
