package dev.idem.jdbc;

class H2NodeIdLeaseStoreContractTest extends JdbcNodeIdLeaseStoreContract {
    @Override
    JdbcStore.Dialect dialect() {
        return JdbcStore.Dialect.H2;
    }
}
