package dev.idem.jdbc;

import dev.idem.testkit.TestDatabase;

class H2InboxTest extends InboxTestBase {
    @Override
    protected TestDatabase open() {
        return TestDatabase.h2("H2InboxTest");
    }
}
