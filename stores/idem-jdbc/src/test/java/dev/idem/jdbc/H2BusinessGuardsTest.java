package dev.idem.jdbc;

import dev.idem.testsupport.TestDatabase;

class H2BusinessGuardsTest extends BusinessGuardsContract {
    @Override
    TestDatabase openDatabase() {
        return TestDatabase.h2("H2BusinessGuardsTest");
    }
}
