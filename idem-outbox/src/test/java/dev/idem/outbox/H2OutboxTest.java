package dev.idem.outbox;

import dev.idem.testsupport.TestDatabase;

class H2OutboxTest extends OutboxContract {
    H2OutboxTest() {
        super(TestDatabase.h2("H2OutboxTest"));
    }
}
