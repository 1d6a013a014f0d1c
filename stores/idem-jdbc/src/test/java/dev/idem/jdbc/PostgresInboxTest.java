package dev.idem.jdbc;

import dev.idem.testsupport.TestDatabase;

class PostgresInboxTest extends ServerInboxTestBase {
    @Override
    protected TestDatabase open() {
        return TestDatabase.postgres("PostgresInboxTest");
    }

    @Override
    protected String backendIdQuery() {
        return "SELECT pg_backend_pid()";
    }

    @Override
    protected String killStatement(long id) {
        return "SELECT pg_terminate_backend(" + id + ")";
    }
}
