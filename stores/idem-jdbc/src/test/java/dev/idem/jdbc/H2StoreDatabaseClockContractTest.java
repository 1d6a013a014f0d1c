package dev.idem.jdbc;

/** The store contract with {@code useDatabaseClock(true)}. */
class H2StoreDatabaseClockContractTest extends JdbcStoreDatabaseClockContract {
    @Override
    Dialect dialect() {
        return Dialect.H2;
    }
}
