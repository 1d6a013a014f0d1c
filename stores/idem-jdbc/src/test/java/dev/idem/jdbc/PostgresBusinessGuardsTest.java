package dev.idem.jdbc;

import dev.idem.testsupport.TestDatabase;

class PostgresBusinessGuardsTest extends BusinessGuardsContract {
    @Override
    TestDatabase openDatabase() {
        return TestDatabase.postgres("PostgresBusinessGuardsTest");
    }
}
