package dev.idem.jdbc;

/** The store contract on MariaDB with a pool that hands out connections with auto-commit off. */
class MariaDbStoreManualCommitContractTest extends JdbcStoreContract {
    @Override
    Dialect dialect() {
        return Dialect.MARIADB;
    }

    @Override
    boolean autoCommitPool() {
        return false;
    }
}
