package dev.idem.jdbc;

import dev.idem.ConfigurationException;
import dev.idem.Outcome;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Insert-once into a business table with a unique key, e.g. a transfer ledger unique on {@code (transfer_id,
 * account_id)}: inserted → {@code PROCESSED}; the key already there → {@code DUPLICATE}.
 *
 * <pre>{@code
 * UniqueRowGuard ledger = UniqueRowGuard.builder().table("ledger").uniqueKey("transfer_id", "account_id").build();
 * Outcome o = ledger.insertOnce(connection, Map.of("transfer_id", t, "account_id", a, "amount", -100),
 *         c -> debit(c, a, 100));                                   // runs only when the row was new
 * }</pre>
 *
 * Never aborts the caller's transaction: on PostgreSQL the insert carries {@code ON CONFLICT (key) DO NOTHING}; on
 * MySQL/MariaDB and H2 a duplicate-key error rolls back only the statement, and is answered {@code DUPLICATE}. A concurrent,
 * uncommitted insert of the same key makes this one wait; it then sees {@code DUPLICATE} (the first committed) or
 * inserts (the first rolled back). Immutable and thread-safe.
 */
public final class UniqueRowGuard {
    private final String table;
    private final List<String> uniqueKey;
    private final StatementTexts<List<String>, InsertText> inserts = new StatementTexts<>(64, this::insertText);
    private volatile @Nullable Dialect dialect;

    private UniqueRowGuard(Builder b) {
        this.table = Objects.requireNonNull(b.table, "table");
        this.uniqueKey = Objects.requireNonNull(b.uniqueKey, "uniqueKey");
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Inserts {@code row} (column → value) unless its unique key exists; {@code onInserted} runs only if new. */
    public Outcome insertOnce(Connection c, Map<String, ?> row, TransactionalHandler onInserted) throws Exception {
        OwnTransaction.requireTransaction(c, "UniqueRowGuard");
        List<String> columns = new ArrayList<>(row.keySet());
        InsertText insert = inserts.of(columns);
        List<@Nullable Object> values = new ArrayList<>();
        columns.forEach(col -> values.add(row.get(col)));
        Dialect d = dialect(c);
        Insert result;
        try {
            result = d == Dialect.POSTGRESQL
                    ? insertOnConflictDoNothing(c, insert.skippingTakenKey(), values)
                    : insertUnlessDuplicate(c, d, insert.plain(), values, row);
        } catch (SQLException e) {
            if (d == Dialect.POSTGRESQL && "40001".equals(e.getSQLState())) {
                throw JdbcInbox.snapshotTooOld(e);
            }
            throw e;
        }
        SQLException violation = result.otherViolation();
        if (violation != null) {
            return Outcome.rejected(
                    "the row is new by " + uniqueKey + " but violates another unique constraint of " + table + " ("
                            + violation.getMessage() + "): it cannot be applied as it is",
                    violation);
        }
        if (!result.inserted()) {
            return Outcome.duplicate("a row with this " + uniqueKey + " is already in " + table);
        }
        return GuardedRow.applied(c, onInserted, "inserted into " + table);
    }

    /** The insert of a row of these columns, after checking them (built once per column list, see {@link #inserts}). */
    private InsertText insertText(List<String> columns) {
        columns.forEach(col -> Schema.identifier("column", col));
        if (!columns.containsAll(uniqueKey)) {
            throw new ConfigurationException(
                    "the row must hold every unique-key column " + uniqueKey + ", got " + columns);
        }
        String plain = "INSERT INTO " + table + " (" + String.join(", ", columns) + ") VALUES ("
                + String.join(", ", Collections.nCopies(columns.size(), "?")) + ")";
        return new InsertText(plain, plain + " ON CONFLICT (" + String.join(", ", uniqueKey) + ") DO NOTHING");
    }

    /** An insert's text, and PostgreSQL's that skips a row whose guard key is taken. */
    private record InsertText(String plain, String skippingTakenKey) {}

    /** What an insert did: inserted the row, found the guard's key taken, or violated another unique constraint. */
    private record Insert(boolean inserted, @Nullable SQLException otherViolation) {
        static final Insert INSERTED = new Insert(true, null);
        static final Insert KEY_TAKEN = new Insert(false, null);
    }

    /**
     * PostgreSQL: the conflict on the guard's own key is skipped by {@code ON CONFLICT (key) DO NOTHING}; any
     * other unique violation fails the statement (and aborts the transaction, which the caller then rolls back).
     */
    private Insert insertOnConflictDoNothing(Connection c, String insert, List<@Nullable Object> values)
            throws SQLException {
        try {
            int n = Statements.update(c, insert, values);
            return n == 1 ? Insert.INSERTED : Insert.KEY_TAKEN;
        } catch (SQLException e) {
            if (SqlErrors.isDuplicateKey(e)) {
                return new Insert(false, e);
            }
            throw e;
        }
    }

    /**
     * MariaDB/MySQL and H2 roll back only the failed statement on a duplicate key, never the transaction, so the
     * caller's transaction stays usable without a savepoint (and its two extra round trips).
     */
    private Insert insertUnlessDuplicate(
            Connection c, Dialect d, String insert, List<@Nullable Object> values, Map<String, ?> row)
            throws SQLException {
        try {
            Statements.update(c, insert, values);
            return Insert.INSERTED;
        } catch (SQLException e) {
            if (!SqlErrors.isDuplicateKey(e)) {
                throw e;
            }
            return keyTaken(c, d, row) ? Insert.KEY_TAKEN : new Insert(false, e);
        }
    }

    /**
     * After a duplicate-key error, whether the guard's own key holds the row's values (a current read: MariaDB's
     * REPEATABLE READ snapshot would not see a row committed after it); if not, another unique constraint failed.
     */
    private boolean keyTaken(Connection c, Dialect d, Map<String, ?> row) throws SQLException {
        List<@Nullable Object> key = new ArrayList<>();
        uniqueKey.forEach(col -> key.add(row.get(col)));
        String where =
                String.join(" AND ", uniqueKey.stream().map(col -> col + " = ?").toList());
        String lock = d.mysqlFamily() ? " LOCK IN SHARE MODE" : "";
        return Statements.queryValue(c, "SELECT 1 FROM " + table + " WHERE " + where + lock, key)
                .isPresent();
    }

    private Dialect dialect(Connection c) throws SQLException {
        Dialect d = dialect;
        if (d == null) {
            d = Schema.detect(c);
            dialect = d;
        }
        return d;
    }

    /** Builds a {@link UniqueRowGuard}; names are checked as SQL identifiers. */
    public static final class Builder {
        private @Nullable String table;
        private List<String> uniqueKey = List.of();

        private Builder() {}

        /** Required: the business table. */
        public Builder table(String table) {
            this.table = Schema.identifier("table", table);
            return this;
        }

        /** Required: the columns of the unique key or constraint that makes a row the same business fact. */
        public Builder uniqueKey(String... columns) {
            List<String> cols = new ArrayList<>();
            for (String col : columns) {
                cols.add(Schema.identifier("uniqueKey column", col));
            }
            this.uniqueKey = List.copyOf(cols);
            return this;
        }

        public UniqueRowGuard build() {
            if (table == null || uniqueKey.isEmpty()) {
                throw new ConfigurationException(
                        "a UniqueRowGuard needs .table(...) and .uniqueKey(...) naming the unique columns");
            }
            return new UniqueRowGuard(this);
        }
    }
}
