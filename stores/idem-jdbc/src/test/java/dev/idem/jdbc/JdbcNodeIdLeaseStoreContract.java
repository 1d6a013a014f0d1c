package dev.idem.jdbc;

import dev.idem.id.spi.NodeIdLeaseStore;
import dev.idem.testkit.NodeIdLeaseStoreContract;
import java.time.Clock;

/** The node-id lease contract on one database; a subclass names the dialect. */
abstract class JdbcNodeIdLeaseStoreContract extends NodeIdLeaseStoreContract {
    abstract Dialect dialect();

    @Override
    protected NodeIdLeaseStore createStore(Clock clock) {
        return JdbcNodeIdLeaseStore.builder(
                        PerClassDatabase.of(getClass(), dialect()).dataSource())
                .createTableIfMissing(true)
                .clock(clock)
                .build();
    }

    @Override
    protected NodeIdLeaseStore createUnavailableStore(Clock clock) {
        return JdbcNodeIdLeaseStore.builder(UrlDataSource.unreachable(dialect()))
                .dialect(dialect())
                .clock(clock)
                .build();
    }
}
