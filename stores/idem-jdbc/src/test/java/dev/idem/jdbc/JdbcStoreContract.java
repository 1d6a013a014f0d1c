package dev.idem.jdbc;

import dev.idem.spi.IdempotencyStore;
import dev.idem.testkit.IdempotencyStoreContract;
import java.time.Clock;

/** The store contract on one database; a subclass names the dialect. */
abstract class JdbcStoreContract extends IdempotencyStoreContract {
    abstract Dialect dialect();

    @Override
    protected IdempotencyStore createStore(Clock clock) {
        return JdbcStore.builder(PerClassDatabase.of(getClass(), dialect()).dataSource())
                .createTableIfMissing(true)
                .clock(clock)
                .build();
    }

    @Override
    protected IdempotencyStore createUnavailableStore(Clock clock) {
        return JdbcStore.builder(UrlDataSource.unreachable(dialect()))
                .dialect(dialect())
                .build();
    }
}
