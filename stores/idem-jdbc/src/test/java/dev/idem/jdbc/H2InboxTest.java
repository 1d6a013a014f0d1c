package dev.idem.jdbc;

import dev.idem.testsupport.TestDatabase;

class H2InboxTest extends InboxTestBase {
    @Override
    protected TestDatabase open() {
        return TestDatabase.h2("H2InboxTest");
    }
}
