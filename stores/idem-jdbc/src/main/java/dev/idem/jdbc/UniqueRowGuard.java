package dev.idem.jdbc;

import dev.idem.ConfigurationException;
import dev.idem.Outcome;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
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
    private volatile @Nullable Dialect dialect;

    private UniqueRowGuard(Builder b) {
        this.table = b.table;
        this.uniqueKey = b.uniqueKey;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Inserts {@code row} (column → value) unless its unique key exists; {@code onInserted} runs only if new. */
    public Outcome insertOnce(Connection c, Map<String, ?> row, SideEffect onInserted) throws SQLException {
        List<String> columns = new ArrayList<>(row.keySet());
        columns.forEach(col -> Schema.identifier("column", col));
        if (!columns.containsAll(uniqueKey)) {
            throw new ConfigurationException(
                    "the row must hold every unique-key column " + uniqueKey + ", got " + columns);
        }
        List<@Nullable Object> values = new ArrayList<>();
        columns.forEach(col -> values.add(row.get(col)));
        String insert = "INSERT INTO " + table + " (" + String.join(", ", columns) + ") VALUES ("
                + String.join(", ", Collections.nCopies(columns.size(), "?")) + ")";
        boolean inserted = dialect(c) == Dialect.POSTGRESQL
                ? Statements.update(
                                c, insert + " ON CONFLICT (" + String.join(", ", uniqueKey) + ") DO NOTHING", values)
                        == 1
                : insertUnlessDuplicate(c, insert, values);
        if (!inserted) {
            return Outcome.duplicate("a row with this " + uniqueKey + " is already in " + table);
        }
        onInserted.run(c);
        return Outcome.processed("inserted into " + table);
    }

    /** The same in a transaction of its own: commit when final, roll back otherwise. */
    public Outcome insertOnce(DataSource dataSource, Map<String, ?> row, SideEffect onInserted) {
        return Transactions.run(dataSource, c -> insertOnce(c, row, onInserted));
    }

    /**
     * MariaDB/MySQL and H2 roll back only the failed statement on a duplicate key, never the transaction, so the
     * caller's transaction stays usable without a savepoint (and its two extra round trips).
     */
    private static boolean insertUnlessDuplicate(Connection c, String insert, List<@Nullable Object> values)
            throws SQLException {
        try {
            Statements.update(c, insert, values);
            return true;
        } catch (SQLException e) {
            if (!SqlErrors.isDuplicateKey(e)) {
                throw e;
            }
            return false;
        }
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
