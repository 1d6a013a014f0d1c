package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.RetryLaterException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
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

    /** The server's id of {@code c}'s session, for {@link #killStatement}. */
    private long backendId(Connection c) throws SQLException {
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(backendIdQuery())) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Test
    @Timeout(60)
    void backendKilled_afterTheBusinessWritesBeforeCommit_andTheMessageRedelivered_isAppliedOnce() throws Exception {
        JdbcInbox inbox = inboxBuilder().lockWait(Duration.ofSeconds(5)).build();
        AtomicLong backend = new AtomicLong();
        CountDownLatch wrote = new CountDownLatch(1);
        CountDownLatch killed = new CountDownLatch(1);
        CompletableFuture<Outcome> first = CompletableFuture.supplyAsync(() -> inbox.handle(Delivery.of("p1"), c -> {
            pay("p1", 1, 10).handle(c);
            backend.set(backendId(c));
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
            backend.set(backendId(c));
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

    /**
     * The handler is the first to see the connection gone (its statement fails), then the inbox's rollback to the
     * savepoint fails too: the {@link RetryLaterException} says the caller's transaction is lost and carries the
     * handler's own error, which was the first sign of it.
     */
    @Test
    @Timeout(60)
    void backendKilledUnderTheHandler_inTheCallersTransaction_theRetryCarriesTheHandlersOwnError() throws Exception {
        JdbcInbox inbox = inbox();
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            long backend = backendId(c);

            Throwable thrown = catchThrowable(() -> inbox.handle(c, Delivery.of("p1"), conn -> {
                db.execute(killStatement(backend));
                Thread.sleep(200); // the kill reaches the backend before the statement
                try (Statement s = conn.createStatement()) {
                    s.execute("SELECT 1");
                } catch (SQLException e) {
                    throw new IllegalStateException("the charge failed", e);
                }
                return Outcome.processed();
            }));

            assertThat(thrown).isInstanceOf(RetryLaterException.class);
            assertThat(thrown.getCause().getSuppressed())
                    .as("the handler's own error")
                    .anySatisfy(e -> assertThat(e).hasMessage("the charge failed"));
        }
        assertThat(ledgerRows("p1")).isZero();
    }

    /**
     * The caller's transaction lost as the inbox releases the handling's savepoint (the last statement before the
     * caller's commit): nothing is applied, so the handling must not answer {@code PROCESSED}; it throws {@link
     * RetryLaterException}, for the caller to roll back (PostgreSQL's release used to be ignored, and the caller's
     * commit then failed with the pool's "Connection is closed", which nothing took for a lost connection).
     */
    @Test
    @Timeout(60)
    void backendKilled_asTheInboxReleasesItsSavepoint_inTheCallersTransaction_isNotProcessed_butRetriedLater()
            throws Exception {
        JdbcInbox inbox = inbox();
        try (Connection real = db.connection()) {
            real.setAutoCommit(false);
            long backend = backendId(real);
            Connection killedAtRelease = (Connection) Proxy.newProxyInstance(
                    Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                        if (method.getName().equals("releaseSavepoint")) {
                            db.execute(killStatement(backend));
                            Thread.sleep(200); // the kill reaches the backend before the release
                        }
                        try {
                            return method.invoke(real, args);
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                    });

            Throwable thrown = catchThrowable(() -> inbox.handle(killedAtRelease, Delivery.of("p1"), pay("p1", 1, 10)));

            assertThat(thrown).isInstanceOf(RetryLaterException.class);
        }
        assertThat(ledgerRows("p1")).isZero();
        assertThat(redeliverUntilFinal(inbox).type()).isEqualTo(Outcome.Type.PROCESSED);
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
