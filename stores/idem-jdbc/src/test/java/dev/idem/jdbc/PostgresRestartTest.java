package dev.idem.jdbc;

import dev.idem.testsupport.PrivateServer;
import dev.idem.testsupport.TestDatabase;

class PostgresRestartTest extends DatabaseRestartTestBase {
    @Override
    protected PrivateServer startServer() {
        return PrivateServer.postgres();
    }

    @Override
    protected TestDatabase open(PrivateServer server) {
        return TestDatabase.postgres(server.server(), "PostgresRestartTest");
    }
}
