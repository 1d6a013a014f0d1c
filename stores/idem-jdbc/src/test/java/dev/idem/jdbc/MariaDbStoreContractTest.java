package dev.idem.jdbc;

import dev.idem.spi.IdempotencyStore;
import dev.idem.testkit.IdempotencyStoreContract;
import dev.idem.testkit.TestDatabase;
import java.time.Clock;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

class MariaDbStoreContractTest extends IdempotencyStoreContract {
    static TestDatabase db;

    @BeforeAll
    @BeforeContainer
    static void start() {
        db = TestDatabase.mariadb("MariaDbStoreContractTest");
        JdbcStore.builder(db.dataSource()).createTableIfMissing(true).build();
    }

    @AfterAll
    @AfterContainer
    static void stop() {
        db.close();
    }

    @Override
    protected IdempotencyStore createStore(Clock clock) {
        return JdbcStore.builder(db.dataSource()).clock(clock).build();
    }

    @Override
    protected IdempotencyStore createUnavailableStore(Clock clock) {
        return JdbcStore.builder(UrlDataSource.unreachable(JdbcStore.Dialect.MARIADB))
                .dialect(JdbcStore.Dialect.MARIADB)
                .build();
    }
}
