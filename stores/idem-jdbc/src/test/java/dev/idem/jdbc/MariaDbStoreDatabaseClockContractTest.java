package dev.idem.jdbc;

/** The store contract with {@code useDatabaseClock(true)}. */
class MariaDbStoreDatabaseClockContractTest extends JdbcStoreDatabaseClockContract {
    @Override
    Dialect dialect() {
        return Dialect.MARIADB;
    }
}
