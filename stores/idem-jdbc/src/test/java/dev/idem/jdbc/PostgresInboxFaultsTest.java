package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.RetryLaterException;
import dev.idem.testkit.TcpProxy;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class PostgresInboxFaultsTest extends InboxFaultsContract {
    @Override
    protected TestDatabase open() {
        return TestDatabase.postgres("PostgresInboxFaultsTest");
    }

    @BeforeAll
    void createDeferredConstraint() {
        db.execute("CREATE TABLE refs (id VARCHAR(64) NOT NULL,"
                + " CONSTRAINT refs_unique_deferred UNIQUE (id) DEFERRABLE INITIALLY DEFERRED)");
    }

    @Override
    protected boolean refusesAtCommit() {
        return true;
    }

    /** Pays, then writes its reference twice: the deferred unique constraint refuses the commit. */
    @Override
    protected TransactionalHandler refusedAtCommit(String paymentId) {
        return c -> {
            pay(paymentId, 2, 20).handle(c);
            try (PreparedStatement ref = c.prepareStatement("INSERT INTO refs VALUES (?)")) {
                ref.setString(1, paymentId);
                ref.executeUpdate();
                ref.executeUpdate();
            }
            return Outcome.processed();
        };
    }

    /**
     * Regression: under REPEATABLE READ a mark committed after the caller's snapshot is a serialization failure;
     * retrying the insert inside the same transaction can never succeed (it was tried four times).
     */
    @Test
    void joinedTransaction_underRepeatableRead_copyCommittedAfterTheSnapshot_asksTheCallerToRetry() throws Exception {
        for (int level : new int[] {Connection.TRANSACTION_REPEATABLE_READ, Connection.TRANSACTION_SERIALIZABLE}) {
            String key = "p" + level;
            JdbcInbox inbox = inbox();
            try (Connection tx = db.connection()) {
                tx.setAutoCommit(false);
                tx.setTransactionIsolation(level);
                try (Statement s = tx.createStatement()) {
                    s.execute("SELECT 1 FROM accounts WHERE id = 1"); // takes the snapshot
                }
                assertThat(inbox.handle(Delivery.of(key), pay(key, 1, 10)).type())
                        .isEqualTo(Outcome.Type.PROCESSED);

                assertThatThrownBy(() -> inbox.handle(tx, Delivery.of(key), pay(key, 1, 10)))
                        .isInstanceOf(RetryLaterException.class)
                        .hasMessageContaining("snapshot");
                tx.rollback();
            }
            try (Connection tx = db.connection()) {
                tx.setAutoCommit(false);
                tx.setTransactionIsolation(level);
                assertThat(inbox.handle(tx, Delivery.of(key), pay(key, 1, 10)).type())
                        .as("the transaction run again")
                        .isEqualTo(Outcome.Type.DUPLICATE);
                tx.commit();
            }
            assertThat(ledgerRows(key)).isEqualTo(1);
        }
    }

    @Test
    void joinedTransaction_underRepeatableRead_markCommittedBeforeTheSnapshot_isDuplicate() throws SQLException {
        JdbcInbox inbox = inbox();
        inbox.handle(Delivery.of("p1"), pay("p1", 1, 10));
        try (Connection tx = db.connection()) {
            tx.setAutoCommit(false);
            tx.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            assertThat(inbox.handle(tx, Delivery.of("p1"), pay("p1", 1, 10)).type())
                    .isEqualTo(Outcome.Type.DUPLICATE);
            tx.commit();
        }
        assertThat(ledgerRows("p1")).isEqualTo(1);
    }

    /**
     * Item 14's unknown fate: the COMMIT of a batch reaches the server but its answer is lost. The inbox cannot know
     * whether the batch committed, so it answers every message IN_PROGRESS; the redelivery finds each applied once.
     */
    @Test
    @Timeout(60)
    void commitAnswerLost_forABatch_isInProgressForEveryMessage_andTheRedeliveryIsDuplicate() throws Exception {
        List<Outcome> redelivered = batchWithTheConnectionCutAtCommit(TcpProxy::blackholeExisting);

        assertThat(redelivered).extracting(Outcome::type).containsOnly(Outcome.Type.DUPLICATE);
    }

    /** The same, with the COMMIT itself lost: nothing committed, and the redelivery applies each message once. */
    @Test
    @Timeout(60)
    void commitLost_forABatch_isInProgressForEveryMessage_andTheRedeliveryAppliesEachOnce() throws Exception {
        List<Outcome> redelivered = batchWithTheConnectionCutAtCommit(TcpProxy::partitionExisting);

        assertThat(redelivered).extracting(Outcome::type).containsOnly(Outcome.Type.PROCESSED);
    }

    /**
     * Runs a batch of three payments on a connection through a proxy that {@code cut} breaks as the inbox commits,
     * checks every message answers IN_PROGRESS, redelivers the batch on a sound connection, checks each payment is
     * applied exactly once, and returns the redelivery's outcomes.
     */
    private List<Outcome> batchWithTheConnectionCutAtCommit(Consumer<TcpProxy> cut) throws SQLException {
        Matcher hostPort = Pattern.compile("//([^/:]+):(\\d+)/").matcher(db.url());
        assertThat(hostPort.find()).as("host and port in %s", db.url()).isTrue();
        List<String> keys = List.of("a", "b", "c");
        try (TcpProxy proxy = TcpProxy.start(hostPort.group(1), Integer.parseInt(hostPort.group(2)))) {
            String proxied = hostPort.replaceFirst("//127.0.0.1:" + proxy.port() + "/") + "&socketTimeout=3";
            JdbcInbox cutAtCommit = JdbcInbox.builder(
                            CommitHook.around(new UrlDataSource(proxied), () -> cut.accept(proxy)))
                    .namespace(namespace)
                    .clock(clock)
                    .build();

            List<Outcome> lost = cutAtCommit.handleBatch(deliveries(keys), payEach(keys));

            assertThat(lost).extracting(Outcome::type).containsOnly(Outcome.Type.IN_PROGRESS);
            assertThat(lost.get(0).reason()).contains("commit");
        }
        List<Outcome> redelivered = inbox().handleBatch(deliveries(keys), payEach(keys));
        for (int i = 0; i < keys.size(); i++) {
            assertThat(ledgerRows(keys.get(i))).as("payment %s", keys.get(i)).isEqualTo(1);
        }
        assertThat(balance(0)).isEqualTo(INITIAL_BALANCE - 30);
        return redelivered;
    }

    private static List<Delivery> deliveries(List<String> keys) {
        return keys.stream().map(Delivery::of).toList();
    }

    private static BatchHandler payEach(List<String> keys) {
        return BatchHandler.eachOf(i -> pay(keys.get(i), 0, 10));
    }
}
