package dev.idem.testsupport;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * The broker proofs' business effect: accounts and a ledger in a PostgreSQL schema of the test's own. {@link #debit}
 * is deliberately not idempotent: each call takes the amount again and adds a ledger row, so that every duplicate
 * effect shows as a second ledger row. A guard runs {@link #debit(Connection, String, long, String)} in its own
 * transaction (an inbox), or {@link #debit(String, long, String)} inside its claim.
 */
public final class PaymentBank implements AutoCloseable {
    private final TestDatabase db;

    /** A fresh schema for {@code testName} with the {@code account} and {@code ledger} tables. */
    public PaymentBank(String testName) {
        this.db = TestDatabase.postgres(testName);
        db.execute("CREATE TABLE account (id VARCHAR(100) PRIMARY KEY, balance BIGINT NOT NULL)");
        db.execute("CREATE TABLE ledger (id SERIAL PRIMARY KEY, account_id VARCHAR(100) NOT NULL,"
                + " message_key VARCHAR(200) NOT NULL, amount BIGINT NOT NULL)");
    }

    public void open(String account, long balance) {
        db.execute("INSERT INTO account (id, balance) VALUES ('" + account + "', " + balance + ")");
    }

    /** {@code UPDATE account SET balance = balance - ?} and a ledger row, in a transaction of its own. */
    public void debit(String account, long amount, String messageKey) throws SQLException {
        try (Connection c = db.connection()) {
            c.setAutoCommit(false);
            try {
                debit(c, account, amount, messageKey);
                c.commit();
            } catch (SQLException e) {
                c.rollback();
                throw e;
            }
        }
    }

    /** The same debit on {@code c}, in the caller's transaction (e.g. an inbox's). */
    public static void debit(Connection c, String account, long amount, String messageKey) throws SQLException {
        try (PreparedStatement update = c.prepareStatement("UPDATE account SET balance = balance - ? WHERE id = ?");
                PreparedStatement insert =
                        c.prepareStatement("INSERT INTO ledger (account_id, message_key, amount) VALUES (?, ?, ?)")) {
            update.setLong(1, amount);
            update.setString(2, account);
            if (update.executeUpdate() != 1) {
                throw new SQLException("no account " + account);
            }
            insert.setString(1, account);
            insert.setString(2, messageKey);
            insert.setLong(3, amount);
            insert.executeUpdate();
        }
    }

    public long ledgerRows(String account) {
        return queryLong("SELECT COUNT(*) FROM ledger WHERE account_id = ?", account);
    }

    /** How many message keys of {@code account} have more than one ledger row (a duplicate effect each). */
    public long keysDebitedTwice(String account) {
        return queryLong(
                "SELECT COUNT(*) FROM (SELECT message_key FROM ledger WHERE account_id = ?"
                        + " GROUP BY message_key HAVING COUNT(*) > 1) d",
                account);
    }

    /** How many distinct message keys of {@code account} have a ledger row. */
    public long keysDebited(String account) {
        return queryLong("SELECT COUNT(DISTINCT message_key) FROM ledger WHERE account_id = ?", account);
    }

    public long balance(String account) {
        return queryLong("SELECT balance FROM account WHERE id = ?", account);
    }

    /** How many database sessions wait on a lock that the session {@code pid} holds. */
    public long sessionsBlockedBy(long pid) {
        return queryLong("SELECT COUNT(*) FROM pg_stat_activity WHERE ?::int = ANY(pg_blocking_pids(pid))", pid);
    }

    public TestDatabase database() {
        return db;
    }

    private long queryLong(String sql, Object arg) {
        try (Connection c = db.connection();
                PreparedStatement s = c.prepareStatement(sql)) {
            s.setObject(1, arg);
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(sql + " failed", e);
        }
    }

    @Override
    public void close() {
        db.close();
    }
}
