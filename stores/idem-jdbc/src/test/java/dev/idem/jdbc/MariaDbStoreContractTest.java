package dev.idem.jdbc;

class MariaDbStoreContractTest extends JdbcStoreContract {
    @Override
    JdbcStore.Dialect dialect() {
        return JdbcStore.Dialect.MARIADB;
    }
}
