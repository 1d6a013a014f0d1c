package dev.idem.jdbc;

/** The store contract with {@code useDatabaseClock(true)}. */
class PostgresStoreDatabaseClockContractTest extends JdbcStoreDatabaseClockContract {
    @Override
    Dialect dialect() {
        return Dialect.POSTGRESQL;
    }
}
