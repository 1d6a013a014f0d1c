package dev.idem.jdbc;

import dev.idem.testsupport.PrivateServer;
import dev.idem.testsupport.TestDatabase;

class MariaDbRestartTest extends DatabaseRestartTestBase {
    @Override
    protected PrivateServer startServer() {
        return PrivateServer.mariadb();
    }

    @Override
    protected TestDatabase open(PrivateServer server) {
        return TestDatabase.mariadb(server.server(), "MariaDbRestartTest");
    }
}
