package dev.idem.jdbc;

import dev.idem.spi.NodeIdLeaseStore;
import dev.idem.testkit.NodeIdLeaseStoreContract;
import dev.idem.testkit.TestDatabase;
import java.time.Clock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

class PostgresNodeIdLeaseStoreContractTest extends NodeIdLeaseStoreContract {
    static TestDatabase db;

    @BeforeAll
    static void start() {
        db = TestDatabase.postgres("PostgresNodeIdLeaseStoreContractTest");
        JdbcNodeIdLeaseStore.builder(db.dataSource()).createTableIfMissing(true).build();
    }

    @AfterAll
    static void stop() {
        db.close();
    }

    @Override
    protected NodeIdLeaseStore createStore(Clock clock) {
        return JdbcNodeIdLeaseStore.builder(db.dataSource()).clock(clock).build();
    }

    @Override
    protected NodeIdLeaseStore createUnavailableStore(Clock clock) {
        return JdbcNodeIdLeaseStore.builder(UrlDataSource.unreachable(JdbcStore.Dialect.POSTGRESQL))
                .dialect(JdbcStore.Dialect.POSTGRESQL)
                .clock(clock)
                .build();
    }
}
