package dev.idem.jdbc;

import dev.idem.testkit.TestDatabase;

class PostgresBusinessGuardsTest extends BusinessGuardsContract {
    @Override
    TestDatabase openDatabase() {
        return TestDatabase.postgres("PostgresBusinessGuardsTest");
    }
}
