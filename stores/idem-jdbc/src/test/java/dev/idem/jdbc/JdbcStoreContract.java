package dev.idem.jdbc;

import dev.idem.spi.IdempotencyStore;
import dev.idem.testkit.IdempotencyStoreContract;
import java.time.Clock;

/** The store contract on one database; a subclass names the dialect and the clock. */
abstract class JdbcStoreContract extends IdempotencyStoreContract {
    abstract Dialect dialect();

    /** Whether the store runs with {@code useDatabaseClock(true)}. Default false. */
    boolean databaseClock() {
        return false;
    }

    @Override
    protected boolean keepsItsOwnTime() {
        return databaseClock();
    }

    @Override
    protected IdempotencyStore createStore(Clock clock) {
        return JdbcStore.builder(PerClassDatabase.of(getClass(), dialect()).dataSource())
                .createTableIfMissing(true)
                .clock(clock)
                .useDatabaseClock(databaseClock())
                .build();
    }

    @Override
    protected IdempotencyStore createUnavailableStore(Clock clock) {
        return JdbcStore.builder(UrlDataSource.unreachable(dialect()))
                .dialect(dialect())
                .build();
    }
}
