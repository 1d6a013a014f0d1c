package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Which SQL text makes the inbox count its marks before the commit on MariaDB/MySQL and H2. */
class WatchedConnectionSqlTextTest {

    @ParameterizedTest
    @ValueSource(
            strings = {
                "SELECT 1",
                "  select id from t where id = ? for update",
                "(SELECT 1) UNION (SELECT 2)",
                "INSERT INTO ledger VALUES (?, ?, ?)",
                "insert ignore into t values (1);",
                "UPDATE accounts SET balance = balance - ? WHERE id = ?",
                "DELETE FROM t",
                "REPLACE INTO t VALUES (1)",
                "WITH x AS (SELECT 1) SELECT * FROM x",
                "VALUES (1)",
                "/* insert com.example.Payment */ insert into payment (id, amount) values (?, ?)",
                "/* a */ /* b */ (SELECT 1)",
                "-- a comment\nSELECT 1",
                "--\tnote\r\nUPDATE t SET a = 1"
            })
    void oneStatementThatCannotEndTheTransaction_isPlain(String sql) {
        assertThat(WatchedConnection.mayEndTheTransaction(sql)).isFalse();
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "ROLLBACK",
                " commit",
                "START TRANSACTION",
                "BEGIN",
                "SET autocommit = 1",
                "CREATE TABLE t2 (id INT)",
                "TRUNCATE t",
                "LOCK TABLES t WRITE",
                "XA END 'x'",
                "CALL quiet_rollback()",
                "{call quiet_rollback()}",
                "/* a comment */ ROLLBACK",
                "-- a comment\nROLLBACK",
                "/*!40101 ROLLBACK */ SELECT 1",
                "/*M! ROLLBACK */ SELECT 1",
                "/* a /* nested */ SELECT 1 */ ROLLBACK",
                "/*/*/ SELECT 1 */ */ COMMIT",
                "-- x\rCOMMIT;\nSELECT 1",
                "-- x\rCREATE TABLE z AS\nSELECT 1",
                "-- x\rSELECT 1\nROLLBACK",
                "/* unterminated SELECT 1",
                "--x\nSELECT 1",
                "-- only a comment",
                "UPDATE t SET a = 1; ROLLBACK",
                "SELECTED",
                "UPDATES t",
                ""
            })
    void textThatMayEndTheTransaction_isNotPlain(String sql) {
        assertThat(WatchedConnection.mayEndTheTransaction(sql)).isTrue();
    }
}
