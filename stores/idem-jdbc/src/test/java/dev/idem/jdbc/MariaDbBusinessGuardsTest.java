package dev.idem.jdbc;

import dev.idem.testkit.TestDatabase;

class MariaDbBusinessGuardsTest extends BusinessGuardsContract {
    @Override
    TestDatabase openDatabase() {
        return TestDatabase.mariadb("MariaDbBusinessGuardsTest");
    }
}
