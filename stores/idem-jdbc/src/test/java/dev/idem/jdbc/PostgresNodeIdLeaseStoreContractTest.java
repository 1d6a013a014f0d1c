package dev.idem.jdbc;

class PostgresNodeIdLeaseStoreContractTest extends JdbcNodeIdLeaseStoreContract {
    @Override
    JdbcStore.Dialect dialect() {
        return JdbcStore.Dialect.POSTGRESQL;
    }
}
