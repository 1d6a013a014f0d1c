package dev.idem.jdbc;

import dev.idem.testsupport.TestDatabase;

class H2InboxFaultsTest extends InboxFaultsContract {
    @Override
    protected TestDatabase open() {
        return TestDatabase.h2("H2InboxFaultsTest");
    }
}
