package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** What the inbox's watch over a handler's connection must see on MariaDB, where the driver can hide a failure. */
class MariaDbWatchedConnectionTest {
    private static TestDatabase db;

    @BeforeAll
    static void open() {
        db = TestDatabase.mariadb("MariaDbWatchedConnectionTest");
        db.execute("CREATE TABLE rows_ (id INT PRIMARY KEY, pad VARCHAR(2000)) ENGINE=InnoDB");
        db.execute("CREATE TABLE heavy (id INT PRIMARY KEY) ENGINE=InnoDB");
        db.execute("CREATE TABLE marks (id INT PRIMARY KEY) ENGINE=InnoDB");
        db.execute("INSERT INTO rows_ SELECT seq, REPEAT('x', 2000) FROM seq_1_to_200");
    }

    @AfterAll
    static void close() {
        db.close();
    }

    /**
     * Review: a deadlock that ends a streamed locking read, with the error still unread on the socket, is read and
     * swallowed by {@code Connection.isValid} (it answers false): no call failed through the watch, which called the
     * transaction intact although InnoDB had rolled it back, marks included; the inbox would have committed without
     * counting them.
     */
    @Test
    @Timeout(60)
    void aDeadlockSwallowedByIsValid_leavesTheWatchUnsure() throws Exception {
        try (Connection victim = db.connection();
                Connection heavy = db.connection()) {
            victim.setAutoCommit(false);
            heavy.setAutoCommit(false);
            try (Statement mark = victim.createStatement()) {
                mark.execute("INSERT INTO marks VALUES (1)");
            }
            try (Statement s = heavy.createStatement()) { // the heavier transaction: InnoDB picks the other as victim
                s.execute("INSERT INTO heavy SELECT seq FROM seq_1_to_5000");
                s.executeQuery("SELECT * FROM rows_ WHERE id = 200 FOR UPDATE").close();
            }
            WatchedConnection watched = new WatchedConnection(victim);
            Connection handler = watched.connection();
            Statement streaming = handler.createStatement();
            streaming.setFetchSize(1);
            ResultSet rows = streaming.executeQuery("SELECT id, pad FROM rows_ ORDER BY id FOR UPDATE");
            assertThat(rows.next()).isTrue(); // streams from row 1, then waits for row 200
            CompletableFuture.runAsync(() -> {
                        try (Statement s = heavy.createStatement()) {
                            s.executeQuery("SELECT * FROM rows_ WHERE id = 1 FOR UPDATE")
                                    .close(); // the deadlock
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    })
                    .get(30, TimeUnit.SECONDS);
            heavy.rollback();

            assertThat(handler.isValid(2))
                    .as("the driver read the deadlock and answered")
                    .isFalse();
            assertThat(watched.provablyIntact())
                    .as("the transaction was rolled back under the handler")
                    .isFalse();
            victim.rollback();
        }
    }
}
