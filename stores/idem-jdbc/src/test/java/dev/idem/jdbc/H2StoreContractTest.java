package dev.idem.jdbc;

class H2StoreContractTest extends JdbcStoreContract {
    @Override
    JdbcStore.Dialect dialect() {
        return JdbcStore.Dialect.H2;
    }
}
