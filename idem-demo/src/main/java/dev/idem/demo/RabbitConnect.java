package dev.idem.demo;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import java.io.IOException;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.concurrent.TimeoutException;

/**
 * Opens the labs' AMQP connections. A broker that accepts the connection but does not finish the handshake in time
 * (a loaded machine) is asked again until the patience runs out; a refused or failed connection is reported at once.
 */
final class RabbitConnect {
    static final Duration HANDSHAKE = Duration.ofSeconds(20);
    static final Duration PATIENCE = Duration.ofSeconds(60);

    private RabbitConnect() {}

    static Connection open(ConnectionFactory factory, String name) throws IOException, TimeoutException {
        return open(factory, name, HANDSHAKE, PATIENCE);
    }

    static Connection open(ConnectionFactory factory, String name, Duration handshake, Duration patience)
            throws IOException, TimeoutException {
        factory.setHandshakeTimeout((int) handshake.toMillis());
        long deadline = System.nanoTime() + patience.toNanos();
        while (true) {
            try {
                return factory.newConnection(name);
            } catch (TimeoutException | SocketTimeoutException e) {
                if (System.nanoTime() - deadline > 0) {
                    throw e;
                }
            }
        }
    }
}
