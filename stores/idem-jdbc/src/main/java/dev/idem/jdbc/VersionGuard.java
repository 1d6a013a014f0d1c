package dev.idem.jdbc;

import dev.idem.ConfigurationException;
import dev.idem.Outcome;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Optimistic-lock guard: a message that carries the version it was produced against applies once, with {@code
 * UPDATE t SET version = version + 1 [, more] WHERE id = ? AND version = ?}.
 *
 * <pre>{@code
 * VersionGuard accounts = VersionGuard.builder().table("accounts").build();
 * Outcome o = accounts.apply(connection, accountId, message.version(), Assignments.of().add("balance", -amount),
 *         SideEffect.NONE);
 * }</pre>
 *
 * One row → {@code PROCESSED}; none → the version is read: higher than expected → {@code DUPLICATE} (applied
 * before), lower → {@code OUT_OF_ORDER} (an earlier message has not applied yet), row missing → {@code
 * OUT_OF_ORDER}. Immutable and thread-safe.
 */
public final class VersionGuard {
    private final String table;
    private final String idColumn;
    private final String versionColumn;

    private VersionGuard(Builder b) {
        this.table = b.table;
        this.idColumn = b.idColumn;
        this.versionColumn = b.versionColumn;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Applies the change to row {@code id} if it is at {@code expectedVersion}, on the caller's transaction. */
    public Outcome apply(Connection c, Object id, long expectedVersion, Assignments also, SideEffect onApplied)
            throws SQLException {
        String sql = "UPDATE " + table + " SET " + versionColumn + " = " + versionColumn + " + 1" + also.sql()
                + " WHERE " + idColumn + " = ? AND " + versionColumn + " = ?";
        List<@Nullable Object> params = new ArrayList<>(also.values());
        params.add(id);
        params.add(expectedVersion);
        if (Statements.update(c, sql, params) == 1) {
            onApplied.run(c);
            return Outcome.processed("version " + expectedVersion + " → " + (expectedVersion + 1));
        }
        Optional<Object> current = Statements.queryValue(
                c, "SELECT " + versionColumn + " FROM " + table + " WHERE " + idColumn + " = ?", List.of(id));
        if (current.isEmpty()) {
            return Outcome.outOfOrder("row " + id + " does not exist yet: retry until it is created");
        }
        long version = ((Number) current.get()).longValue();
        if (version > expectedVersion) {
            return Outcome.duplicate(
                    "already applied: the row is at version " + version + ", the message expected " + expectedVersion);
        }
        if (version < expectedVersion) {
            return Outcome.outOfOrder("the row is at version " + version + ", the message expects " + expectedVersion
                    + ": an earlier message has not applied yet, retry later");
        }
        return Outcome.outOfOrder("the row moved past version " + expectedVersion + " concurrently: retry");
    }

    /** The same in a transaction of its own: commit when final, roll back otherwise. */
    public Outcome apply(
            DataSource dataSource, Object id, long expectedVersion, Assignments also, SideEffect onApplied) {
        return Transactions.inTransaction(dataSource, c -> apply(c, id, expectedVersion, also, onApplied));
    }

    /** Builds a {@link VersionGuard}; names are checked as SQL identifiers. */
    public static final class Builder {
        private @Nullable String table;
        private String idColumn = "id";
        private String versionColumn = "version";

        private Builder() {}

        /** Required: the business table. */
        public Builder table(String table) {
            this.table = Schema.identifier("table", table);
            return this;
        }

        /** Default {@code id}. */
        public Builder idColumn(String column) {
            this.idColumn = Schema.identifier("idColumn", column);
            return this;
        }

        /** An integer column. Default {@code version}. */
        public Builder versionColumn(String column) {
            this.versionColumn = Schema.identifier("versionColumn", column);
            return this;
        }

        public VersionGuard build() {
            if (table == null) {
                throw new ConfigurationException("a VersionGuard needs the business table: call .table(\"accounts\")");
            }
            return new VersionGuard(this);
        }
    }
}
