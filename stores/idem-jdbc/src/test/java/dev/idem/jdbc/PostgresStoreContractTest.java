package dev.idem.jdbc;

class PostgresStoreContractTest extends JdbcStoreContract {
    @Override
    JdbcStore.Dialect dialect() {
        return JdbcStore.Dialect.POSTGRESQL;
    }
}
