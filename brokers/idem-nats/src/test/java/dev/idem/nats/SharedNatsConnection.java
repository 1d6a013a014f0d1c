package dev.idem.nats;

import io.nats.client.Connection;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** A test class's one connection to the shared server ({@link NatsFixture#connect()}), open while its tests run. */
abstract class SharedNatsConnection {
    static Connection nats;

    @BeforeAll
    static void connect() {
        nats = NatsFixture.connect();
    }

    @AfterAll
    static void disconnect() throws InterruptedException {
        nats.close();
    }
}
