package dev.idem.jdbc;

import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.testkit.MutableClock;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInstance;

/**
 * The inbox tests' database: the idempotency table and a business that is deliberately not idempotent ({@code
 * balance = balance - amount} plus a ledger row without a unique key). A subclass per database says which.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class InboxFixture {
    static final long INITIAL_BALANCE = 1_000_000_000L;
    static final int ACCOUNTS = 100;

    protected TestDatabase db;
    protected final MutableClock clock = MutableClock.atNow();
    protected String namespace;

    protected abstract TestDatabase open();

    @BeforeAll
    void createTables() {
        db = open();
        JdbcStore.builder(db.dataSource()).createTableIfMissing(true).build();
        db.execute("CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL)");
        db.execute(
                "CREATE TABLE ledger (payment_id VARCHAR(64) NOT NULL, account_id INT NOT NULL, amount BIGINT NOT NULL)");
        db.execute("CREATE TABLE audit (note VARCHAR(64) NOT NULL)");
    }

    @AfterAll
    void dropDatabase() {
        if (db != null) {
            db.close();
        }
    }

    @BeforeEach
    void resetBusiness() {
        namespace = "n" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
        db.execute("DELETE FROM ledger");
        db.execute("DELETE FROM audit");
        db.execute("DELETE FROM accounts");
        StringBuilder values = new StringBuilder();
        for (int a = 0; a < ACCOUNTS; a++) {
            values.append(a == 0 ? "" : ", ")
                    .append("(")
                    .append(a)
                    .append(", ")
                    .append(INITIAL_BALANCE)
                    .append(")");
        }
        db.execute("INSERT INTO accounts VALUES " + values);
    }

    protected JdbcInbox.Builder inboxBuilder() {
        return JdbcInbox.builder(db.dataSource()).namespace(namespace).clock(clock);
    }

    protected JdbcInbox inbox() {
        return inboxBuilder().build();
    }

    /** The non-idempotent business update of payment {@code id}. */
    static TransactionalHandler pay(String paymentId, int account, long amount) {
        return c -> {
            try (PreparedStatement debit =
                            c.prepareStatement("UPDATE accounts SET balance = balance - ? WHERE id = ?");
                    PreparedStatement ledger = c.prepareStatement("INSERT INTO ledger VALUES (?, ?, ?)")) {
                debit.setLong(1, amount);
                debit.setInt(2, account);
                debit.executeUpdate();
                ledger.setString(1, paymentId);
                ledger.setInt(2, account);
                ledger.setLong(3, amount);
                ledger.executeUpdate();
            }
            return Outcome.processed();
        };
    }

    /** A message of a test batch whose messages each do something else. */
    record Message(Delivery delivery, TransactionalHandler handler) {}

    static Message message(String key, @Nullable String fingerprint, TransactionalHandler handler) {
        return new Message(Delivery.of(key, fingerprint), handler);
    }

    /** Handles {@code messages} as one batch, each with its own handler. */
    static List<Outcome> handleEach(JdbcInbox inbox, Message... messages) {
        return inbox.handleBatch(
                Arrays.stream(messages).map(Message::delivery).toList(),
                BatchHandler.eachOf(i -> messages[i].handler()));
    }

    protected long balance(int account) throws SQLException {
        return queryLong("SELECT balance FROM accounts WHERE id = " + account);
    }

    protected long ledgerRows(String paymentId) throws SQLException {
        return queryLong("SELECT COUNT(*) FROM ledger WHERE payment_id = '" + paymentId + "'");
    }

    protected long marks() throws SQLException {
        return queryLong("SELECT COUNT(*) FROM idem_keys WHERE id LIKE '" + namespace + ":%'");
    }

    protected long queryLong(String query) throws SQLException {
        try (Connection c = db.connection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(query)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
