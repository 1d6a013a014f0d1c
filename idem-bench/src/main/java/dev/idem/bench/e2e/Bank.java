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
import org.jspecify.annotations.Nullable;

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

    /** The dedup tables of the contenders and their key column; retained rows are filled into those that exist. */
    private static final Map<String, String> DEDUP_KEYS = Map.of(
            "processed", "id",
            "idem_keys", "id",
            "CAMEL_MESSAGEPROCESSED", "messageId",
            "INT_METADATA_STORE", "METADATA_KEY");

    /** The dedup table each contender writes its marks to; the others keep none in the database. */
    private static final Map<String, String> DEDUP_TABLE_OF = Map.of(
            "hand", "processed",
            "hand-batch", "processed",
            "idem-inbox", "idem_keys",
            "idem-inbox-batch", "idem_keys",
            "idem-jdbc-lease", "idem_keys",
            "camel-jdbc", "CAMEL_MESSAGEPROCESSED",
            "si-jdbc", "INT_METADATA_STORE");

    /** The dedup table of a contender, or null when it keeps no marks in the database. */
    static @Nullable String dedupTableOf(String contender) {
        return DEDUP_TABLE_OF.get(contender);
    }

    /** Every retained row's key starts with this; every key of a run sorts before it. */
    static final String RETAINED = "retained:";

    /**
     * Empties the business tables and refills the accounts (and the payments, for the state-machine guard). With
     * {@code retained} 0 empties every dedup table; else leaves {@code retained} completed marks of other keys in
     * {@code dedupTable} (the running contender's, if any), as a table holds after days of traffic. The retained rows
     * are written once by one statement on the server and kept from run to run (only the run's own rows, which sort
     * before them, are deleted), so that millions of them cost their fill once.
     */
    void reset(Workload workload, int retained, @Nullable String dedupTable) throws SQLException {
        for (String table : List.of("account", "payment", "ledger", "ledger_unique")) {
            execute((engine == Engine.H2 ? "TRUNCATE TABLE " : "TRUNCATE ") + table);
        }
        for (Map.Entry<String, String> dedup : DEDUP_KEYS.entrySet()) {
            if ((retained == 0 || dedup.getKey().equals(dedupTable)) && tableExists(dedup.getKey())) {
                keepRetained(dedup.getKey(), dedup.getValue(), retained);
            }
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

    private void keepRetained(String table, String key, int retained) throws SQLException {
        if (retained == 0) {
            execute((engine == Engine.H2 ? "TRUNCATE TABLE " : "TRUNCATE ") + table);
            return;
        }
        if (hasKey(table, key, RETAINED + retained) && !hasKey(table, key, RETAINED + (retained + 1))) {
            execute("DELETE FROM " + table + " WHERE " + key + " < '" + RETAINED + "'");
            return;
        }
        execute((engine == Engine.H2 ? "TRUNCATE TABLE " : "TRUNCATE ") + table);
        long started = System.nanoTime();
        fill(table, retained, false);
        analyze(table);
        System.err.printf(
                java.util.Locale.ROOT,
                "filled %s with %,d retained rows in %.1f s%n",
                table,
                retained,
                (System.nanoTime() - started) / 1e9);
    }

    /** Fresh statistics (and, on PostgreSQL, a visibility map) for a table just filled, as autovacuum would leave it. */
    void analyze(String table) throws SQLException {
        if (engine == Engine.H2) {
            return;
        }
        try (Connection c = dataSource.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(true); // VACUUM cannot run inside a transaction
            try (Statement s = c.createStatement()) {
                s.execute(engine == Engine.POSTGRESQL ? "VACUUM ANALYZE " + table : "ANALYZE TABLE " + table);
            } finally {
                c.setAutoCommit(autoCommit);
            }
        }
    }

    private boolean hasKey(String table, String key, String value) throws SQLException {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT 1 FROM " + table + " WHERE " + key + " = ?")) {
            ps.setString(1, value);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    /**
     * Inserts {@code count} completed marks of other keys into a dedup table, kept until tomorrow ({@code expired}
     * false, keys {@code retained:1…}) or with their retention ended, waiting for the purge (keys {@code
     * expired:1…}). One statement on the server (generate_series, MariaDB's sequence engine, H2's SYSTEM_RANGE).
     */
    void fill(String table, int count, boolean expired) throws SQLException {
        long now = System.currentTimeMillis();
        long expiresAt = expired ? now - 1000 : now + 86_400_000L;
        String prefix = "'" + (expired ? "expired:" : RETAINED) + "'";
        String key = switch (engine) {
            case POSTGRESQL -> prefix + " || g";
            case MARIADB -> "CONCAT(" + prefix + ", g.seq)";
            case H2 -> prefix + " || g.X";
        };
        String source = switch (engine) {
            case POSTGRESQL -> " FROM generate_series(1, " + count + ") g";
            case MARIADB -> " FROM seq_1_to_" + count + " g";
            case H2 -> " FROM SYSTEM_RANGE(1, " + count + ") g";
        };
        String ts = engine == Engine.MARIADB ? "NOW()" : "CURRENT_TIMESTAMP";
        String sql = switch (table) {
            case "idem_keys" ->
                "INSERT INTO idem_keys (id, state, owner_token, fencing_token, expires_at, completed_at, fingerprint,"
                        + " result_data) SELECT " + key + ", 'DONE', 'old', 0, " + expiresAt + ", " + (now - 2000)
                        + ", NULL, NULL" + source;
            case "processed" -> "INSERT INTO processed (id) SELECT " + key + source;
            case "CAMEL_MESSAGEPROCESSED" ->
                "INSERT INTO CAMEL_MESSAGEPROCESSED (processorName, messageId, createdAt) SELECT 'payments', " + key
                        + ", " + ts + source;
            case "INT_METADATA_STORE" ->
                "INSERT INTO INT_METADATA_STORE (METADATA_KEY, METADATA_VALUE, REGION) SELECT " + key + ", " + key
                        + ", 'DEFAULT'" + source;
            default -> throw new IllegalArgumentException("not a dedup table: " + table);
        };
        execute(sql);
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

    /**
     * Runs {@code work} in a transaction: commit when it returns, roll back when it throws. As a careful engineer
     * writes it on either kind of pool: on a connection handed out in auto-commit, auto-commit goes off for the
     * transaction and the commit is switching it back on (JDBC commits then: one round trip for both, as Idem's own
     * transactions do); on a connection handed out with auto-commit off, nothing is switched.
     */
    <T> T inTransaction(Work<T> work) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            if (autoCommit) {
                c.setAutoCommit(false);
            }
            boolean committed = false;
            try {
                T result = work.run(c);
                if (autoCommit) {
                    c.setAutoCommit(true);
                } else {
                    c.commit();
                }
                committed = true;
                return result;
            } catch (SQLException | RuntimeException | Error e) {
                rollbackQuietly(c);
                throw e;
            } finally {
                if (autoCommit && !committed) {
                    c.setAutoCommit(true);
                }
            }
        }
    }

    /** Whether the pool hands out connections in auto-commit. */
    boolean autoCommitPool() throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            return c.getAutoCommit();
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

    /** Runs one statement and commits it, whatever the pool's commit mode. */
    void execute(String sql) throws SQLException {
        inTransaction(c -> {
            try (Statement s = c.createStatement()) {
                s.execute(sql);
            }
            return null;
        });
    }

    private void insertRows(String tableAndColumns, List<Object[]> rows) throws SQLException {
        if (rows.isEmpty()) {
            return;
        }
        int width = rows.get(0).length;
        String tuple = "(" + String.join(", ", Collections.nCopies(width, "?")) + ")";
        inTransaction(c -> {
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
            return null;
        });
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
