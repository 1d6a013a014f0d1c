package dev.idem.jdbc;

import dev.idem.testsupport.TestDatabase;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * MariaDB's one-mark insert (ON DUPLICATE KEY UPDATE ... RETURNING, the inserted mark told by its owner column) and
 * the MySQL dialect's INSERT IGNORE path, both on the MariaDB server.
 */
class MariaDbInboxDialectsTest {
    @ParameterizedTest
    @EnumSource(
            value = Dialect.class,
            names = {"MARIADB", "MYSQL"})
    void eachMessageHandledOnce_onEachMySqlFamilyDialect(Dialect dialect) throws Exception {
        TestDatabase db = InboxStatementScenario.database(getClass(), Dialect.MARIADB);
        InboxStatementScenario.handlesEachMessageOnce(db.url(), dialect.name(), b -> b.dialect(dialect));
    }
}
