package dev.idem.jdbc;

/** The store contract with {@code useDatabaseClock(true)}. */
class PostgresStoreDatabaseClockContractTest extends JdbcStoreContract {
    @Override
    Dialect dialect() {
        return Dialect.POSTGRESQL;
    }

    @Override
    boolean databaseClock() {
        return true;
    }
}
