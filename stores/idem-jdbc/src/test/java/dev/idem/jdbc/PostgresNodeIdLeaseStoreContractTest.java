package dev.idem.jdbc;

class PostgresNodeIdLeaseStoreContractTest extends JdbcNodeIdLeaseStoreContract {
    @Override
    Dialect dialect() {
        return Dialect.POSTGRESQL;
    }
}
