package dev.idem.jdbc;

class MariaDbNodeIdLeaseStoreContractTest extends JdbcNodeIdLeaseStoreContract {
    @Override
    Dialect dialect() {
        return Dialect.MARIADB;
    }
}
