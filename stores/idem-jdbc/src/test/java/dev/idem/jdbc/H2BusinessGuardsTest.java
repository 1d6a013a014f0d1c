package dev.idem.jdbc;

import dev.idem.testkit.TestDatabase;

class H2BusinessGuardsTest extends BusinessGuardsContract {
    @Override
    TestDatabase openDatabase() {
        return TestDatabase.h2("H2BusinessGuardsTest");
    }
}
