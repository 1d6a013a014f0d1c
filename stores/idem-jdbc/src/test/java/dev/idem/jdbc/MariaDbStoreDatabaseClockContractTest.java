package dev.idem.jdbc;

/** The store contract with {@code useDatabaseClock(true)}. */
class MariaDbStoreDatabaseClockContractTest extends JdbcStoreContract {
    @Override
    Dialect dialect() {
        return Dialect.MARIADB;
    }

    @Override
    boolean databaseClock() {
        return true;
    }
}
