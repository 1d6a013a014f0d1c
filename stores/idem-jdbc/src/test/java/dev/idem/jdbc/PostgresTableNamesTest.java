package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Delivery;
import dev.idem.IdempotencyKey;
import dev.idem.Outcome;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Issue 24 review: PostgreSQL's array statements name the array's rows (a CTE and an alias). A table of the user's
 * whose name is one of those names must still be the table the statements read and lock.
 */
class PostgresTableNamesTest {

    @Test
    void inboxOnATableNamedLikeTheBatchsCte_marksABatch() throws SQLException {
        for (String table : List.of("given", "inserted")) {
            try (TestDatabase db = TestDatabase.postgres("PostgresTableNamesTest")) {
                JdbcInbox inbox = JdbcInbox.builder(db.dataSource())
                        .table(table)
                        .createTableIfMissing(true)
                        .namespace("orders")
                        .build();
                List<Delivery> batch = List.of(Delivery.of("a"), Delivery.of("b"), Delivery.of("c"));
                inbox.handle(Delivery.of("b"), c -> Outcome.processed());

                assertThat(inbox.handleBatch(
                                batch, (c, fresh) -> Collections.nCopies(fresh.size(), Outcome.processed())))
                        .as("table %s", table)
                        .extracting(Outcome::type)
                        .containsExactly(Outcome.Type.PROCESSED, Outcome.Type.DUPLICATE, Outcome.Type.PROCESSED);
            }
        }
    }

    /** With the bug, the claim read and locked every row of a table named {@code g}, so it waited for this one. */
    @Test
    void claimAllOnATableNamedLikeTheArraysAlias_locksOnlyItsOwnKeys() throws SQLException {
        try (TestDatabase db = TestDatabase.postgres("PostgresTableNamesTest");
                HikariDataSource pool = lockWaitOfOneSecond(db)) {
            JdbcStore store = JdbcStore.builder(pool)
                    .table("g")
                    .createTableIfMissing(true)
                    .build();
            IdempotencyKey other = IdempotencyKey.of("orders", "other");
            assertThat(store.claim(ClaimRequest.of(other, "owner-x", Duration.ofMinutes(5))))
                    .isInstanceOf(ClaimResult.Claimed.class);
            try (Connection holder = db.connection();
                    Statement s = holder.createStatement()) {
                holder.setAutoCommit(false);
                s.execute("SELECT * FROM g FOR UPDATE"); // another transaction holds the row of "other"

                List<ClaimResult> claims = store.claimAll(List.of(
                        ClaimRequest.of(IdempotencyKey.of("orders", "a"), "owner-y", Duration.ofMinutes(5)),
                        ClaimRequest.of(IdempotencyKey.of("orders", "b"), "owner-y", Duration.ofMinutes(5))));

                assertThat(claims).allMatch(ClaimResult.Claimed.class::isInstance);
                holder.rollback();
            }
        }
    }

    /** With the bug, a table named like a CTE of the single claim was read as the CTE: the claim failed. */
    @Test
    void storeOnATableNamedLikeTheClaimsCtes_claimsCompletesAndTakesOver() throws SQLException {
        for (String table : List.of("clock", "before", "claimed")) {
            try (TestDatabase db = TestDatabase.postgres("PostgresTableNamesTest")) {
                JdbcStore store = JdbcStore.builder(db.dataSource())
                        .table(table)
                        .createTableIfMissing(true)
                        .build();
                IdempotencyKey paid = IdempotencyKey.of("orders", "paid");
                IdempotencyKey lapsed = IdempotencyKey.of("orders", "lapsed");

                assertThat(store.claim(ClaimRequest.of(paid, "owner-a", Duration.ofMinutes(5))))
                        .as("table %s", table)
                        .isInstanceOf(ClaimResult.Claimed.class);
                assertThat(store.claim(ClaimRequest.of(paid, "owner-b", Duration.ofMinutes(5))))
                        .isInstanceOf(ClaimResult.InProgress.class);
                store.complete(paid, "owner-a", null, Duration.ofHours(1));
                assertThat(store.claim(ClaimRequest.of(paid, "owner-b", Duration.ofMinutes(5))))
                        .isInstanceOf(ClaimResult.Done.class);
                store.claim(ClaimRequest.of(lapsed, "owner-a", Duration.ofMillis(1)));
                await().atMost(Duration.ofSeconds(10))
                        .until(() -> store.claim(ClaimRequest.of(lapsed, "owner-b", Duration.ofMinutes(5)))
                                instanceof ClaimResult.TakenOver);
            }
        }
    }

    private static HikariDataSource lockWaitOfOneSecond(TestDatabase db) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(db.url());
        config.setMaximumPoolSize(2);
        config.setConnectionInitSql("SET lock_timeout = '1s'");
        return new HikariDataSource(config);
    }
}
