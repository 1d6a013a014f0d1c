package dev.idem.jdbc;

class H2StoreContractTest extends JdbcStoreContract {
    @Override
    Dialect dialect() {
        return Dialect.H2;
    }
}
