package dev.idem.jdbc;

class MariaDbNodeIdLeaseStoreContractTest extends JdbcNodeIdLeaseStoreContract {
    @Override
    JdbcStore.Dialect dialect() {
        return JdbcStore.Dialect.MARIADB;
    }
}
