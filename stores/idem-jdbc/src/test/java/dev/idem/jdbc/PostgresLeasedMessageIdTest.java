package dev.idem.jdbc;

import dev.idem.id.spi.NodeIdLeaseStore;
import dev.idem.testkit.LeasedMessageIdContract;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import java.net.InetSocketAddress;
import java.time.Clock;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

class PostgresLeasedMessageIdTest extends LeasedMessageIdContract {
    static TestDatabase db;

    @BeforeAll
    static void start() {
        db = TestDatabase.postgres("PostgresLeasedMessageIdTest");
        JdbcNodeIdLeaseStore.builder(db.dataSource()).createTableIfMissing(true).build();
    }

    @AfterAll
    static void stop() {
        db.close();
    }

    @Override
    protected InetSocketAddress server() {
        return InetSocketAddress.createUnresolved(
                TestServers.postgres().host(), TestServers.postgres().port());
    }

    /** Through a proxy, a connection per call (no pool to wait on once the proxy is gone). */
    @Override
    protected NodeIdLeaseStore createStore(Clock clock, String host, int port) {
        TestServers.Server server = TestServers.postgres();
        DataSource dataSource = host.equals(server.host()) && port == server.port()
                ? db.dataSource()
                : new UrlDataSource(db.url()
                        .replace("//" + server.host() + ":" + server.port() + "/", "//" + host + ":" + port + "/"));
        return JdbcNodeIdLeaseStore.builder(dataSource)
                .dialect(Dialect.POSTGRESQL)
                .clock(clock)
                .build();
    }
}
