package dev.idem.bench.e2e;

import dev.idem.bench.e2e.Workload.Delivery;
import dev.idem.bench.e2e.Workload.Fault;
import dev.idem.bench.e2e.Workload.Payment;
import dev.idem.testsupport.TestDatabase.Engine;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.sql.DataSource;

/**
 * The business database of the workload: {@code account(id, balance)}, {@code ledger(payment_id, account_id,
 * amount)} (one row per applied debit), {@code payment(id, status)} for the state-machine guard, and the dedup tables
 * of the contenders. The business effect is one non-idempotent transaction: {@code UPDATE account SET balance =
 * balance - ?} and a ledger insert. Thread-safe.
 */
final class Bank {
    private final DataSource dataSource;
    private final Engine engine;
    private final Faults faults;

    Bank(DataSource dataSource, Engine engine, Faults faults) {
        this.dataSource = dataSource;
        this.engine = engine;
        this.faults = faults;
    }

    DataSource dataSource() {
        return dataSource;
    }

    Engine engine() {
        return engine;
    }

    Faults faults() {
        return faults;
    }

    // ---------------------------------------------------------------- schema

    /** Creates the tables every run shares (once per database). */
    void createTables() throws SQLException {
        String bigint = "BIGINT";
        String autoId = switch (engine) {
            case POSTGRESQL -> "BIGSERIAL PRIMARY KEY";
            case MARIADB -> "BIGINT AUTO_INCREMENT PRIMARY KEY";
            case H2 -> "BIGINT AUTO_INCREMENT PRIMARY KEY";
        };
        String engineSuffix = engine == Engine.MARIADB ? " ENGINE=InnoDB" : "";
        execute("CREATE TABLE account (id INT PRIMARY KEY, balance " + bigint + " NOT NULL)" + engineSuffix);
        execute("CREATE TABLE payment (id " + bigint + " PRIMARY KEY, status VARCHAR(16) NOT NULL)" + engineSuffix);
        execute("CREATE TABLE processed (id VARCHAR(64) PRIMARY KEY)" + engineSuffix);
        execute("CREATE TABLE ledger (id " + autoId + ", payment_id " + bigint + " NOT NULL, account_id INT NOT NULL,"
                + " amount " + bigint + " NOT NULL)" + engineSuffix);
        execute("CREATE TABLE ledger_unique (id " + autoId + ", payment_id " + bigint
                + " NOT NULL UNIQUE, account_id INT NOT NULL, amount " + bigint + " NOT NULL)" + engineSuffix);
        runStatementsOf(
                "INT_METADATA_STORE",
                "org/springframework/integration/jdbc/schema-"
                        + switch (engine) {
                            case POSTGRESQL -> "postgresql";
                            case MARIADB -> "mysql";
                            case H2 -> "h2";
                        }
                        + ".sql");
    }

    /** Empties every table and refills the accounts (and the payments, for the state-machine guard). */
    void reset(Workload workload, List<String> alsoTruncate) throws SQLException {
        List<String> tables = new ArrayList<>(List.of("account", "payment", "processed", "ledger", "ledger_unique"));
        tables.add("INT_METADATA_STORE");
        tables.addAll(alsoTruncate);
        for (String table : tables) {
            execute((engine == Engine.H2 ? "TRUNCATE TABLE " : "TRUNCATE ") + table);
        }
        List<Object[]> accounts = new ArrayList<>();
        for (int a = 1; a <= workload.accounts(); a++) {
            accounts.add(new Object[] {a, workload.initialBalance()});
        }
        insertRows("account (id, balance)", accounts);
        List<Object[]> payments = new ArrayList<>();
        for (Payment p : workload.payments()) {
            payments.add(new Object[] {p.id(), "PENDING"});
        }
        insertRows("payment (id, status)", payments);
    }

    /**
     * Fills {@code idem_keys} with {@code count} completed marks of other keys, as a store holds after days of
     * traffic: kept until tomorrow ({@code expired} false) or with their retention ended, waiting for the purge.
     * Written by one statement on the server.
     */
    void fillMarks(int count, boolean expired) throws SQLException {
        long now = System.currentTimeMillis();
        long expiresAt = expired ? now - 1000 : now + 86_400_000L;
        String prefix = expired ? "'expired:'" : "'retained:'";
        String rows = switch (engine) {
            case POSTGRESQL ->
                "SELECT " + prefix + " || g, 'DONE', 'old', 0, " + expiresAt + ", " + (now - 2000)
                        + ", NULL, NULL FROM generate_series(1, " + count + ") g";
            case MARIADB ->
                "SELECT CONCAT(" + prefix + ", seq), 'DONE', 'old', 0, " + expiresAt + ", " + (now - 2000)
                        + ", NULL, NULL FROM seq_1_to_" + count;
            case H2 ->
                "SELECT " + prefix + " || X, 'DONE', 'old', 0, " + expiresAt + ", " + (now - 2000)
                        + ", NULL, NULL FROM SYSTEM_RANGE(1, " + count + ")";
        };
        execute("INSERT INTO idem_keys (id, state, owner_token, fencing_token, expires_at, completed_at, fingerprint,"
                + " result_data) " + rows);
    }

    boolean tableExists(String table) {
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement()) {
            s.executeQuery("SELECT 1 FROM " + table + " WHERE 1 = 0").close();
            return true;
        } catch (SQLException e) {
            return false;
        }
    }

    // ---------------------------------------------------------------- the business transaction

    /**
     * The effect, on the caller's transaction: debit the account, then write the ledger row. Injects the delivery's
     * handler failure or in-handler crash between the two statements.
     */
    void debit(Connection c, Delivery d) throws SQLException {
        debitAccount(c, d);
        insertLedger(c, d.payment(), "ledger");
    }

    /** The debit alone, with the fault injection of {@link #debit}; for a ledger row written by a guard first. */
    void debitAccount(Connection c, Delivery d) throws SQLException {
        Payment p = d.payment();
        try (PreparedStatement ps = c.prepareStatement("UPDATE account SET balance = balance - ? WHERE id = ?")) {
            ps.setLong(1, p.amount());
            ps.setInt(2, p.account());
            ps.executeUpdate();
        }
        failIfAsked(c, d);
    }

    void insertLedger(Connection c, Payment p, String table) throws SQLException {
        try (PreparedStatement ps =
                c.prepareStatement("INSERT INTO " + table + " (payment_id, account_id, amount) VALUES (?, ?, ?)")) {
            ps.setLong(1, p.id());
            ps.setInt(2, p.account());
            ps.setLong(3, p.amount());
            ps.executeUpdate();
        }
    }

    /**
     * The effect of many deliveries on the caller's transaction, as a careful engineer batches it: the debits as one
     * JDBC batch in account order (concurrent batches lock the account rows in one order), then the ledger rows as
     * another. No fault injection: the caller checks each delivery with {@link #failIfAsked} first.
     */
    void debitAll(Connection c, List<Delivery> deliveries) throws SQLException {
        if (deliveries.isEmpty()) {
            return;
        }
        List<Delivery> byAccount = new ArrayList<>(deliveries);
        byAccount.sort(java.util.Comparator.comparingInt(d -> d.payment().account()));
        try (PreparedStatement ps = c.prepareStatement("UPDATE account SET balance = balance - ? WHERE id = ?")) {
            for (Delivery d : byAccount) {
                ps.setLong(1, d.payment().amount());
                ps.setInt(2, d.payment().account());
                ps.addBatch();
            }
            ps.executeBatch();
        }
        try (PreparedStatement ps =
                c.prepareStatement("INSERT INTO ledger (payment_id, account_id, amount) VALUES (?, ?, ?)")) {
            for (Delivery d : deliveries) {
                ps.setLong(1, d.payment().id());
                ps.setInt(2, d.payment().account());
                ps.setLong(3, d.payment().amount());
                ps.addBatch();
            }
            ps.executeBatch();
        }
    }

    /** The delivery's injected fault, where its handler would run: a handler failure or a crash inside it. */
    void failIfAsked(Connection c, Delivery d) throws SQLException {
        if (d.fault() == Fault.HANDLER_FAILURE) {
            throw new Faults.HandlerFailure(d.key());
        }
        if (d.fault() == Fault.CRASH_IN_HANDLER) {
            c.rollback(); // the database ends the dead session's transaction
            throw faults.crash(d.key());
        }
    }

    /** After the effect committed: dies if the delivery is to crash there. */
    void crashAfterCommitIfAsked(Delivery d) {
        if (d.fault() == Fault.CRASH_AFTER_COMMIT) {
            throw faults.crash(d.key());
        }
    }

    /** Work on one connection in one transaction of its own. */
    @FunctionalInterface
    interface Work<T> {
        T run(Connection c) throws SQLException;
    }

    /** Runs {@code work} in a transaction: commit when it returns, roll back when it throws. */
    <T> T inTransaction(Work<T> work) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                T result = work.run(c);
                c.commit();
                return result;
            } catch (SQLException | RuntimeException | Error e) {
                rollbackQuietly(c);
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        }
    }

    static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException ignored) {
            // the connection is broken; the pool drops it and the database ends the transaction
        }
    }

    /** The hand-written dedup insert: true when the key was new. Never aborts a PostgreSQL transaction. */
    boolean insertProcessed(Connection c, String key) throws SQLException {
        String sql = switch (engine) {
            case POSTGRESQL -> "INSERT INTO processed (id) VALUES (?) ON CONFLICT DO NOTHING";
            case MARIADB -> "INSERT IGNORE INTO processed (id) VALUES (?)";
            case H2 -> "INSERT INTO processed (id) VALUES (?)";
        };
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, key);
            return ps.executeUpdate() == 1;
        } catch (SQLException e) {
            if (engine == Engine.H2 && "23505".equals(e.getSQLState())) {
                return false; // H2 keeps the transaction usable after a unique violation
            }
            throw e;
        }
    }

    /**
     * The hand-written batch claim: one multi-row insert of {@code sortedKeys} (distinct, in one order every
     * transaction shares, so that concurrent batches holding the same keys wait instead of deadlocking), {@code ON
     * CONFLICT DO NOTHING RETURNING id} on PostgreSQL, {@code INSERT IGNORE … RETURNING id} on MariaDB (10.5+); on
     * H2, which has neither, one insert per key in the same order. Returns the keys that were new.
     */
    Set<String> insertProcessedAll(Connection c, List<String> sortedKeys) throws SQLException {
        Set<String> inserted = new HashSet<>();
        if (sortedKeys.isEmpty()) {
            return inserted;
        }
        if (engine == Engine.H2) {
            for (String key : sortedKeys) {
                if (insertProcessed(c, key)) {
                    inserted.add(key);
                }
            }
            return inserted;
        }
        String values = String.join(", ", Collections.nCopies(sortedKeys.size(), "(?)"));
        String sql = engine == Engine.POSTGRESQL
                ? "INSERT INTO processed (id) VALUES " + values + " ON CONFLICT DO NOTHING RETURNING id"
                : "INSERT IGNORE INTO processed (id) VALUES " + values + " RETURNING id";
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < sortedKeys.size(); i++) {
                ps.setString(i + 1, sortedKeys.get(i));
            }
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    inserted.add(rs.getString(1));
                }
            }
        }
        return inserted;
    }

    static boolean isDeadlock(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException s) {
                String state = s.getSQLState();
                if ("40001".equals(state) || "40P01".equals(state) || s.getErrorCode() == 1213) {
                    return true;
                }
            }
        }
        return false;
    }

    // ---------------------------------------------------------------- the check

    /** What the tables say after a run. */
    record Check(int lost, int doubled, int accountsOff, long ledgerRows) {
        boolean correct() {
            return lost == 0 && doubled == 0 && accountsOff == 0;
        }
    }

    /**
     * Lost = payments without a ledger row; doubled = ledger rows beyond one per payment; accounts off = accounts
     * whose balance is not the initial balance minus each of its payments once.
     */
    Check check(Workload workload, String ledgerTable) throws SQLException {
        Map<Long, Integer> rowsPerPayment = new HashMap<>();
        long rows = 0;
        Map<Integer, Long> balances = new HashMap<>();
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement()) {
            try (ResultSet rs =
                    s.executeQuery("SELECT payment_id, COUNT(*) FROM " + ledgerTable + " GROUP BY payment_id")) {
                while (rs.next()) {
                    rowsPerPayment.put(rs.getLong(1), rs.getInt(2));
                    rows += rs.getInt(2);
                }
            }
            try (ResultSet rs = s.executeQuery("SELECT id, balance FROM account")) {
                while (rs.next()) {
                    balances.put(rs.getInt(1), rs.getLong(2));
                }
            }
        }
        int lost = 0;
        int doubled = 0;
        Map<Integer, Long> expected = new HashMap<>();
        for (Payment p : workload.payments()) {
            int n = rowsPerPayment.getOrDefault(p.id(), 0);
            if (n == 0) {
                lost++;
            }
            doubled += Math.max(0, n - 1);
            expected.merge(p.account(), p.amount(), Long::sum);
        }
        int off = 0;
        for (int a = 1; a <= workload.accounts(); a++) {
            long want = workload.initialBalance() - expected.getOrDefault(a, 0L);
            if (balances.getOrDefault(a, Long.MIN_VALUE) != want) {
                off++;
            }
        }
        return new Check(lost, doubled, off, rows);
    }

    // ---------------------------------------------------------------- helpers

    void execute(String sql) throws SQLException {
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    private void insertRows(String tableAndColumns, List<Object[]> rows) throws SQLException {
        if (rows.isEmpty()) {
            return;
        }
        int width = rows.get(0).length;
        String tuple = "(" + String.join(", ", Collections.nCopies(width, "?")) + ")";
        try (Connection c = dataSource.getConnection()) {
            for (int from = 0; from < rows.size(); from += 500) {
                List<Object[]> chunk = rows.subList(from, Math.min(rows.size(), from + 500));
                String sql = "INSERT INTO " + tableAndColumns + " VALUES "
                        + String.join(", ", Collections.nCopies(chunk.size(), tuple));
                try (PreparedStatement ps = c.prepareStatement(sql)) {
                    int i = 1;
                    for (Object[] row : chunk) {
                        for (Object v : row) {
                            ps.setObject(i++, v);
                        }
                    }
                    ps.executeUpdate();
                }
            }
        }
    }

    /**
     * Runs the statements of a SQL script shipped in a jar that mention {@code table} (statements end with {@code ;},
     * comments are dropped).
     */
    private void runStatementsOf(String table, String resource) throws SQLException {
        String text;
        try (InputStream in = Bank.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("resource " + resource + " not found on the class path");
            }
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + resource, e);
        }
        text = text.replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("(?m)^\\s*--.*$", "");
        for (String statement : text.split(";")) {
            if (statement.contains(table)) {
                execute(statement.strip());
            }
        }
    }
}
