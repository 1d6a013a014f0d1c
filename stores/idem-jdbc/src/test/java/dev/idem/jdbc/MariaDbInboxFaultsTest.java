package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.RetryLaterException;
import dev.idem.testsupport.TestDatabase;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class MariaDbInboxFaultsTest extends InboxFaultsContract {
    @Override
    protected TestDatabase open() {
        return TestDatabase.mariadb("MariaDbInboxFaultsTest");
    }

    /**
     * Regression: InnoDB rolls back the whole transaction of a deadlock victim, the mark with it. A handler that
     * caught the deadlock and carried on wrote its effect in a new transaction, which committed without the mark:
     * {@code PROCESSED}, and the redelivery paid again.
     */
    @Test
    @Timeout(60)
    void handlerSwallowingADeadlock_isNeverProcessedWithoutItsMark_andThePaymentIsAppliedOnce() throws Exception {
        JdbcInbox inbox = inbox();
        AtomicInteger runs = new AtomicInteger();

        Outcome outcome = inbox.handle(Delivery.of("p1"), c -> {
            if (runs.incrementAndGet() == 1) {
                swallowDeadlock(c);
            }
            return pay("p1", 1, 10).handle(c);
        });
        Outcome redelivered = inbox.handle(Delivery.of("p1"), pay("p1", 1, 10));

        assertPaidOnce(outcome, redelivered);
    }

    /**
     * The mark count is skipped when the handler's connection saw no failure; a handler that takes the driver's own
     * connection out of it ({@code unwrap}) and swallows a deadlock there must still be caught.
     */
    @Test
    @Timeout(60)
    void handlerSwallowingADeadlock_onTheUnwrappedDriverConnection_isNeverProcessedWithoutItsMark() throws Exception {
        JdbcInbox inbox = inbox();
        AtomicInteger runs = new AtomicInteger();

        Outcome outcome = inbox.handle(Delivery.of("p1"), c -> {
            if (runs.incrementAndGet() == 1) {
                swallowDeadlock(c.unwrap(Connection.class));
            }
            return pay("p1", 1, 10).handle(c);
        });
        Outcome redelivered = inbox.handle(Delivery.of("p1"), pay("p1", 1, 10));

        assertThat(runs).as("rerun after the lost mark was found").hasValue(2);
        assertPaidOnce(outcome, redelivered);
    }

    @Test
    @Timeout(60)
    void handlerSwallowingADeadlock_inABatch_isNeverProcessedWithoutItsMark() throws Exception {
        JdbcInbox inbox = inbox();
        AtomicInteger runs = new AtomicInteger();

        List<Outcome> outcomes = handleEach(inbox, message("a", null, pay("a", 3, 30)), message("p1", null, c -> {
            if (runs.incrementAndGet() == 1) {
                swallowDeadlock(c);
            }
            return pay("p1", 1, 10).handle(c);
        }));
        List<Outcome> redelivered =
                handleEach(inbox, message("a", null, pay("a", 3, 30)), message("p1", null, pay("p1", 1, 10)));

        assertThat(outcomes).extracting(Outcome::type).containsOnly(Outcome.Type.PROCESSED);
        assertThat(redelivered).extracting(Outcome::type).containsOnly(Outcome.Type.DUPLICATE);
        assertThat(ledgerRows("p1") + ledgerRows("a")).isEqualTo(2);
    }

    @Test
    @Timeout(60)
    void handlerSwallowingADeadlock_inTheCallersTransaction_asksTheCallerToRetry() throws Exception {
        JdbcInbox inbox = inbox();
        try (Connection tx = db.connection()) {
            tx.setAutoCommit(false);
            assertThatThrownBy(() -> inbox.handle(tx, Delivery.of("p1"), c -> {
                        swallowDeadlock(c);
                        return pay("p1", 1, 10).handle(c);
                    }))
                    .isInstanceOf(RetryLaterException.class);
            tx.rollback();
        }
        assertThat(ledgerRows("p1")).isZero();
        assertThat(marks()).isZero();
    }

    /**
     * Regression: SQL text that ends the transaction (a {@code ROLLBACK} sent as a statement, a procedure whose error
     * handler rolls back and returns without an error) went by with no failing call and no {@code Connection} method:
     * the inbox skipped its count of the marks, committed the effect without them ({@code PROCESSED}), and the
     * redelivery paid again.
     */
    @ParameterizedTest
    @ValueSource(strings = {"ROLLBACK", "CALL quiet_rollback()", "{call quiet_rollback()}"})
    @Timeout(60)
    void handlerEndingTheTransactionBySqlText_isNeverProcessedWithoutItsMark(String sql) throws Exception {
        db.execute("CREATE TABLE IF NOT EXISTS taken (id INT PRIMARY KEY)");
        db.execute("INSERT IGNORE INTO taken VALUES (1)");
        db.execute("CREATE OR REPLACE PROCEDURE quiet_rollback() BEGIN"
                + " DECLARE EXIT HANDLER FOR SQLEXCEPTION ROLLBACK; INSERT INTO taken VALUES (1); END");
        JdbcInbox inbox = inbox();
        AtomicInteger runs = new AtomicInteger();

        Outcome outcome = inbox.handle(Delivery.of("p1"), c -> {
            if (runs.incrementAndGet() == 1) {
                if (sql.startsWith("{")) {
                    try (CallableStatement call = c.prepareCall(sql)) {
                        call.execute();
                    }
                } else {
                    try (Statement s = c.createStatement()) {
                        s.execute(sql);
                    }
                }
            }
            return pay("p1", 1, 10).handle(c);
        });
        Outcome redelivered = inbox.handle(Delivery.of("p1"), pay("p1", 1, 10));

        assertPaidOnce(outcome, redelivered);
    }

    /** Payment p1 (account 1, 10) was processed, its redelivery answered as a duplicate, and it was paid once. */
    private void assertPaidOnce(Outcome outcome, Outcome redelivered) throws Exception {
        assertThat(outcome.type()).as("%s", outcome).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(redelivered.type()).isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(ledgerRows("p1")).isEqualTo(1);
        assertThat(balance(1)).isEqualTo(INITIAL_BALANCE - 10);
    }

    /**
     * Makes {@code c}'s transaction the victim of a real deadlock and swallows the error: c locks account 7, a heavier
     * transaction locks account 8 and waits for 7, then c asks for 8. InnoDB rolls back the lighter one, c.
     */
    private void swallowDeadlock(Connection c) throws Exception {
        Statements.update(c, "UPDATE accounts SET balance = balance WHERE id = 7", List.of());
        CountDownLatch otherHolds8 = new CountDownLatch(1);
        AtomicLong otherId = new AtomicLong();
        CompletableFuture<Void> other = CompletableFuture.runAsync(() -> {
            try (Connection o = db.connection()) {
                o.setAutoCommit(false);
                otherId.set(((Number) Statements.queryValue(o, "SELECT CONNECTION_ID()", List.of())
                                .orElseThrow())
                        .longValue());
                for (int i = 0; i < 200; i++) {
                    Statements.update(o, "INSERT INTO audit VALUES ('heavy')", List.of());
                }
                Statements.update(o, "UPDATE accounts SET balance = balance WHERE id = 8", List.of());
                otherHolds8.countDown();
                Statements.update(o, "UPDATE accounts SET balance = balance WHERE id = 7", List.of());
                o.rollback();
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        });
        otherHolds8.await();
        await().atMost(Duration.ofSeconds(20))
                .until(() -> queryLong("SELECT COUNT(*) FROM information_schema.INNODB_TRX"
                                + " WHERE trx_state = 'LOCK WAIT' AND trx_mysql_thread_id = " + otherId.get())
                        == 1);
        try {
            Statements.update(c, "UPDATE accounts SET balance = balance WHERE id = 8", List.of());
            throw new IllegalStateException("expected a deadlock");
        } catch (SQLException e) {
            assertThat(SqlErrors.isDeadlock(e)).as("%s", e).isTrue();
        }
        other.get(30, TimeUnit.SECONDS);
    }
}
