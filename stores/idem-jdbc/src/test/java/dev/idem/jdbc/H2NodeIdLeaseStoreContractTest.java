package dev.idem.jdbc;

class H2NodeIdLeaseStoreContractTest extends JdbcNodeIdLeaseStoreContract {
    @Override
    Dialect dialect() {
        return Dialect.H2;
    }
}
