package dev.idem.redis;

import dev.idem.testsupport.PrivateServer;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A redis-server of one test class's own (for tests that pause, flush or restart it): started before the class's
 * first test, stopped after its last. Register it as a static field with {@code @RegisterExtension}.
 */
final class PrivateRedis implements BeforeAllCallback, AfterAllCallback {
    private PrivateServer server;

    @Override
    public void beforeAll(ExtensionContext context) {
        server = PrivateServer.redis();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (server != null) {
            server.close();
        }
    }

    String url() {
        return server.url();
    }

    void restart() {
        server.restart();
    }
}
