package dev.idem.outbox;

import dev.idem.testsupport.TestDatabase;

class MariaDbOutboxTest extends OutboxContract {
    MariaDbOutboxTest() {
        super(TestDatabase.mariadb("MariaDbOutboxTest"));
    }
}
