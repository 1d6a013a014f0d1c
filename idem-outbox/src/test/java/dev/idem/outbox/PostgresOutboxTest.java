package dev.idem.outbox;

import dev.idem.testsupport.TestDatabase;

class PostgresOutboxTest extends OutboxContract {
    PostgresOutboxTest() {
        super(TestDatabase.postgres("PostgresOutboxTest"));
    }
}
