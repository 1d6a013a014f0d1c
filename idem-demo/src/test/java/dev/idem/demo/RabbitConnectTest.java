package dev.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.idem.testkit.TcpProxy;
import dev.idem.testsupport.TestServers;
import java.net.ConnectException;
import java.net.ServerSocket;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * How the labs open an AMQP connection: a CI run on a loaded machine failed when the local RabbitMQ took longer than
 * the handshake timeout to answer a new connection, once.
 */
class RabbitConnectTest {
    private static final Duration HANDSHAKE = Duration.ofSeconds(1);

    @Test
    @Timeout(60)
    void aBrokerSlowToAnswerTheHandshake_isAskedAgain_untilItAnswers() throws Exception {
        URI rabbit = URI.create(TestServers.rabbitmq().url());
        try (TcpProxy slow = TcpProxy.start(rabbit.getHost(), rabbit.getPort() > 0 ? rabbit.getPort() : 5672)) {
            slow.blackholeAll(true);
            CompletableFuture.delayedExecutor(HANDSHAKE.toMillis() * 3 / 2, TimeUnit.MILLISECONDS)
                    .execute(() -> slow.blackholeAll(false));

            try (Connection connection = RabbitConnect.open(
                    factory(rabbit, slow.port()), "idem-test-slow", HANDSHAKE, Duration.ofSeconds(30))) {
                assertThat(connection.isOpen()).isTrue();
            }
        }
    }

    @Test
    @Timeout(60)
    void aPortNobodyListensOn_isReportedAtOnce() throws Exception {
        URI rabbit = URI.create(TestServers.rabbitmq().url());
        int closed;
        try (ServerSocket socket = new ServerSocket(0)) {
            closed = socket.getLocalPort();
        }

        assertThatThrownBy(() -> RabbitConnect.open(
                        factory(rabbit, closed), "idem-test-refused", HANDSHAKE, Duration.ofMinutes(5)))
                .isInstanceOf(ConnectException.class);
    }

    private static ConnectionFactory factory(URI rabbit, int port) throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(rabbit);
        factory.setHost("127.0.0.1");
        factory.setPort(port);
        factory.setAutomaticRecoveryEnabled(false);
        return factory;
    }
}
