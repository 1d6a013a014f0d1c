package dev.idem.jdbc;

import dev.idem.testsupport.TestDatabase;

class MariaDbBusinessGuardsTest extends BusinessGuardsContract {
    @Override
    TestDatabase openDatabase() {
        return TestDatabase.mariadb("MariaDbBusinessGuardsTest");
    }
}
