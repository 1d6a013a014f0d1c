package dev.idem.jdbc;

/** The store contract with {@code useDatabaseClock(true)}. */
class H2StoreDatabaseClockContractTest extends JdbcStoreContract {
    @Override
    Dialect dialect() {
        return Dialect.H2;
    }

    @Override
    boolean databaseClock() {
        return true;
    }
}
