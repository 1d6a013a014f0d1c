package dev.idem.jdbc;

class MariaDbStoreContractTest extends JdbcStoreContract {
    @Override
    Dialect dialect() {
        return Dialect.MARIADB;
    }
}
