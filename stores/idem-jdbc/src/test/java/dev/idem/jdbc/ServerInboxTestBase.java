package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Delivery;
import dev.idem.Outcome;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Tests that need a database server: a backend killed in the middle of a transaction. */
abstract class ServerInboxTestBase extends InboxTestBase {

    /** The query that returns this connection's backend id. */
    protected abstract String backendIdQuery();

    /** The statement that kills backend {@code id} from another connection. */
    protected abstract String killStatement(long id);

    @Test
    @Timeout(60)
    void backendKilled_afterTheBusinessWritesBeforeCommit_andTheMessageRedelivered_isAppliedOnce() throws Exception {
        JdbcInbox inbox = inboxBuilder().lockWait(Duration.ofSeconds(5)).build();
        AtomicLong backend = new AtomicLong();
        CountDownLatch wrote = new CountDownLatch(1);
        CountDownLatch killed = new CountDownLatch(1);
        CompletableFuture<Outcome> first = CompletableFuture.supplyAsync(() -> inbox.handle(Delivery.of("p1"), c -> {
            pay("p1", 1, 10).handle(c);
            try (Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery(backendIdQuery())) {
                rs.next();
                backend.set(rs.getLong(1));
            }
            wrote.countDown();
            killed.await();
            return Outcome.processed();
        }));
        wrote.await();

        db.execute(killStatement(backend.get()));
        killed.countDown();
        Outcome interrupted = first.get(30, TimeUnit.SECONDS);
        Outcome redelivered = redeliverUntilFinal(inbox);

        assertThat(interrupted.isFinal()).as("%s", interrupted).isFalse();
        assertThat(redelivered.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(balance(1)).isEqualTo(INITIAL_BALANCE - 10);
        assertThat(ledgerRows("p1")).isEqualTo(1);
    }

    @Test
    @Timeout(60)
    void backendKilled_whileTheHandlerWrites_andTheMessageRedelivered_isAppliedOnce() throws Exception {
        JdbcInbox inbox = inbox();
        AtomicLong backend = new AtomicLong();
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch killed = new CountDownLatch(1);
        CompletableFuture<Outcome> first = CompletableFuture.supplyAsync(() -> inbox.handle(Delivery.of("p1"), c -> {
            try (Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery(backendIdQuery())) {
                rs.next();
                backend.set(rs.getLong(1));
            }
            started.countDown();
            killed.await();
            return pay("p1", 1, 10).handle(c);
        }));
        started.await();

        db.execute(killStatement(backend.get()));
        killed.countDown();
        Outcome interrupted = first.get(30, TimeUnit.SECONDS);
        Outcome redelivered = redeliverUntilFinal(inbox);

        assertThat(interrupted.type()).isIn(Outcome.Type.FAILED, Outcome.Type.IN_PROGRESS);
        assertThat(redelivered.type()).isEqualTo(Outcome.Type.PROCESSED);
        assertThat(balance(1)).isEqualTo(INITIAL_BALANCE - 10);
        assertThat(ledgerRows("p1")).isEqualTo(1);
    }

    private static Outcome redeliverUntilFinal(JdbcInbox inbox) throws SQLException {
        Outcome outcome;
        int attempts = 0;
        do {
            outcome = inbox.handle(Delivery.of("p1"), pay("p1", 1, 10));
        } while (!outcome.isFinal() && ++attempts < 20);
        return outcome;
    }
}
