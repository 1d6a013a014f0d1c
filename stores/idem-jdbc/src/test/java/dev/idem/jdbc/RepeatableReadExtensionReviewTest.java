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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
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
 * manager that does not retry, FAILED until it is dead-lettered.
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

    @Test
    @Timeout(120)
    void postgres_repeatableReadHandlerTransactionLongerThanAThirdOfTheLease_completesInItsTransaction()
            throws Exception {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(postgres.url());
        config.setMaximumPoolSize(4);
        config.setTransactionIsolation("TRANSACTION_REPEATABLE_READ");
        try (HikariDataSource repeatableRead = new HikariDataSource(config)) {
            JdbcStore store = JdbcStore.builder(postgres.dataSource())
                    .createTableIfMissing(true)
                    .build();
            OwnTransaction tx = OwnTransaction.of(repeatableRead);
            AtomicInteger attempts = new AtomicInteger();
            List<Outcome> deliveries = new ArrayList<>();
            try (Guard guard = Guard.builder(store)
                    .namespace("review-rr-extension")
                    .lease(Duration.ofMillis(1500))
                    .build()) {
                for (int delivery = 0; delivery < 3; delivery++) {
                    deliveries.add(guard.handle(
                            Delivery.of("pay-42"),
                            ctx -> tx.run(c -> {
                                attempts.incrementAndGet();
                                balance(c); // the transaction's snapshot: taken inside the handler, after the claim
                                try (Statement s = c.createStatement()) {
                                    s.execute("SELECT pg_sleep(0.8)"); // the rest of the work (one lease/2)
                                }
                                try (PreparedStatement ps = c.prepareStatement("INSERT INTO payments VALUES (?)")) {
                                    ps.setString(1, "pay-42");
                                    ps.executeUpdate();
                                }
                                return store.completeInTransaction(c, ctx, Outcome.processed());
                            })));
                    if (deliveries.get(delivery).isFinal()) {
                        break;
                    }
                }
            }
            assertThat(deliveries.get(0).type())
                    .as("deliveries " + deliveries + " after " + attempts.get() + " transactions")
                    .isEqualTo(Outcome.Type.PROCESSED);
        }
    }

    private static void balance(Connection c) throws SQLException {
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM payments")) {
            rs.next();
        }
    }
}
