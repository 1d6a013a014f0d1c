package dev.idem.jdbc;

import dev.idem.testsupport.TestDatabase;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The one-mark insert (a UNION of the inserted rows, padded with NULLs, and the taken marks) and the batch insert
 * under every pgjdbc mode that changes how a statement is typed or planned: server-prepared from the first
 * execution (generic plans), the simple protocol (values inlined), every statement cached, a savepoint around
 * each statement, untyped strings.
 */
class PostgresInboxDriverModesTest {
    @ParameterizedTest
    @ValueSource(
            strings = {
                "prepareThreshold=5",
                "prepareThreshold=1",
                "prepareThreshold=-1",
                "preferQueryMode=simple",
                "preferQueryMode=extendedCacheEverything&prepareThreshold=1",
                "autosave=always&prepareThreshold=1",
                "stringtype=unspecified&prepareThreshold=1",
                "preferQueryMode=simple&stringtype=unspecified",
                "binaryTransfer=false&prepareThreshold=1"
            })
    void eachMessageHandledOnce_underEveryDriverMode(String options) throws Exception {
        TestDatabase db = InboxStatementScenario.database(getClass(), Dialect.POSTGRESQL);
        InboxStatementScenario.handlesEachMessageOnce(db.url() + "&" + options, options, b -> b);
    }
}
