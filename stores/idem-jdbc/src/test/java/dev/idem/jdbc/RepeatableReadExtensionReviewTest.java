package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.Guard;
import dev.idem.Outcome;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Second review of completeInTransaction (c85dff0, 54f7f26, e371d10): on PostgreSQL under REPEATABLE READ (or
 * SERIALIZABLE), the guard's own lease watchdog makes the completion fail. The watchdog extends the claim (commits a
 * new version of the claim's row) every third of the lease while the handler runs; a handler transaction whose
 * snapshot was taken before such an extension (it began inside the handler, as e371d10's message advises) can no
 * longer UPDATE that row: "could not serialize access due to concurrent update". OwnTransaction runs the work again,
 * and the watchdog extends again during it, every time: a handler whose transaction lasts longer than a third of the
 * lease never completes, on any delivery. The message is retried for ever (IN_PROGRESS), or, under a transaction
 * manager that does not retry, FAILED until it is dead-lettered. Fixed: the completion written last fails once naming
 * the fix; written first, it takes the snapshot itself and stops the renewals, and completes.
 */
class RepeatableReadExtensionReviewTest {
    private static TestDatabase postgres;

    @BeforeAll
    static void open() {
        postgres = TestDatabase.postgres("RrExtensionReview");
        postgres.execute("CREATE TABLE IF NOT EXISTS payments (id VARCHAR(200) PRIMARY KEY)");
    }

    @AfterAll
    static void close() {
        postgres.close();
    }

    /** Fixed: the completion written last fails once, with what to do, instead of being retried for ever. */
    @Test
    @Timeout(120)
    void postgres_repeatableReadTransactionLongerThanAThirdOfTheLease_completingLast_failsNamingTheFix()
            throws Exception {
        Outcome outcome = handleOnRepeatableRead(false);

        assertThat(outcome.type()).as(outcome.toString()).isEqualTo(Outcome.Type.FAILED);
        assertThat(outcome.reason())
                .contains("call completeInTransaction first in the transaction")
                .contains("READ COMMITTED");
    }

    /**
     * Completing first, the transaction's snapshot is taken by the completion itself, and the completion stops the
     * watchdog's renewals (the transaction's lock keeps other consumers out): the long transaction completes.
     */
    @Test
    @Timeout(120)
    void postgres_repeatableReadTransactionLongerThanAThirdOfTheLease_completingFirst_isProcessed() throws Exception {
        Outcome outcome = handleOnRepeatableRead(true);

        assertThat(outcome.type()).as(outcome.toString()).isEqualTo(Outcome.Type.PROCESSED);
    }

    /** One delivery whose repeatable-read transaction lasts more than half the lease, completing first or last. */
    private static Outcome handleOnRepeatableRead(boolean completeFirst) throws Exception {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(postgres.url());
        config.setMaximumPoolSize(4);
        config.setTransactionIsolation("TRANSACTION_REPEATABLE_READ");
        String id = "pay-" + completeFirst;
        try (HikariDataSource repeatableRead = new HikariDataSource(config)) {
            JdbcStore store = JdbcStore.builder(postgres.dataSource())
                    .createTableIfMissing(true)
                    .build();
            OwnTransaction tx = OwnTransaction.of(repeatableRead);
            try (Guard guard = Guard.builder(store)
                    .namespace("review-rr-extension")
                    .lease(Duration.ofMillis(1500))
                    .build()) {
                return guard.handle(
                        Delivery.of(id),
                        ctx -> tx.run(c -> {
                            Outcome completed =
                                    completeFirst ? store.completeInTransaction(c, ctx, Outcome.processed()) : null;
                            balance(c); // without the completion first, the transaction's snapshot is taken here
                            try (Statement s = c.createStatement()) {
                                s.execute(
                                        "SELECT pg_sleep(0.8)"); // the rest of the work: more than a third of the lease
                            }
                            try (PreparedStatement ps = c.prepareStatement("INSERT INTO payments VALUES (?)")) {
                                ps.setString(1, id);
                                ps.executeUpdate();
                            }
                            return completed != null
                                    ? completed
                                    : store.completeInTransaction(c, ctx, Outcome.processed());
                        }));
            }
        }
    }

    private static void balance(Connection c) throws SQLException {
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM payments")) {
            rs.next();
        }
    }
}
