package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.testkit.MutableClock;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A copy whose one-mark statement takes its snapshot while a purge's delete of the key's expired mark is uncommitted:
 * the snapshot still shows the old mark, the insert waits for the purge. Committed purge: the insert takes the key
 * (the old mark must not be read as the answer); rolled-back purge: the expired mark is taken over. Either way the
 * handler runs exactly once and one mark is left.
 */
class PostgresInboxPurgeRaceTest {
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void copy_racingAPurgeOfItsExpiredMark_runsOnce(boolean purgeCommits) throws Exception {
        TestDatabase db = PerClassDatabase.of(getClass(), Dialect.POSTGRESQL);
        JdbcStore.builder(db.dataSource()).createTableIfMissing(true).build();
        String ns = "p" + purgeCommits;
        MutableClock clock = MutableClock.atNow();
        JdbcInbox inbox = JdbcInbox.builder(db.dataSource())
                .namespace(ns)
                .clock(clock)
                .retention(Duration.ofMinutes(1))
                .build();
        AtomicInteger runs = new AtomicInteger();
        TransactionalHandler effect = c -> {
            runs.incrementAndGet();
            return Outcome.processed();
        };
        assertThat(inbox.handle(Delivery.of("k"), effect).type()).isEqualTo(Outcome.Type.PROCESSED);
        clock.advance(Duration.ofMinutes(2));
        try (Connection purge = db.connection()) {
            purge.setAutoCommit(false);
            long purgePid = backendPid(purge);
            try (PreparedStatement ps = purge.prepareStatement("DELETE FROM idem_keys WHERE id = ?")) {
                ps.setString(1, ns + ":k");
                assertThat(ps.executeUpdate()).isEqualTo(1);
            }
            CompletableFuture<Outcome> copy =
                    CompletableFuture.supplyAsync(() -> inbox.handle(Delivery.of("k"), effect));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!blockedBy(db, purgePid) && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThat(copy).isNotDone();
            if (purgeCommits) {
                purge.commit();
            } else {
                purge.rollback();
            }
            Outcome outcome = copy.get(20, TimeUnit.SECONDS);
            assertThat(outcome.type()).as("%s", outcome).isEqualTo(Outcome.Type.PROCESSED);
        }
        assertThat(runs).hasValue(2);
        assertThat(inbox.handle(Delivery.of("k"), effect).type()).isEqualTo(Outcome.Type.DUPLICATE);
        assertThat(runs).hasValue(2);
    }

    private static long backendPid(Connection c) throws Exception {
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** Whether a session waits for a lock that session {@code pid} holds (the copy's insert, on the purge's delete). */
    private static boolean blockedBy(TestDatabase db, long pid) throws Exception {
        try (Connection c = db.connection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT COUNT(*) FROM pg_stat_activity WHERE CAST(? AS INTEGER) = ANY (pg_blocking_pids(pid))")) {
            ps.setLong(1, pid);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1) > 0;
            }
        }
    }
}
