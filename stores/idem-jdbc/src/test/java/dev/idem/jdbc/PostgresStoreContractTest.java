package dev.idem.jdbc;

class PostgresStoreContractTest extends JdbcStoreContract {
    @Override
    Dialect dialect() {
        return Dialect.POSTGRESQL;
    }
}
