package dev.idem.jdbc;

import dev.idem.Outcome;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;

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
    private final GuardedRow version;

    private VersionGuard(GuardedRow version) {
        this.version = version;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Applies the change to row {@code id} if it is at {@code expectedVersion}, on the caller's transaction. */
    public Outcome apply(Connection c, Object id, long expectedVersion, Assignments also, SideEffect onApplied)
            throws SQLException {
        OwnTransaction.requireTransaction(c, "VersionGuard");
        String column = version.column();
        if (version.changed(
                c, column + " = " + column + " + 1", List.of(), also, id, column + " = ?", List.of(expectedVersion))) {
            onApplied.run(c);
            return Outcome.processed("version " + expectedVersion + " → " + (expectedVersion + 1));
        }
        Optional<Object> current = version.current(c, id);
        if (current.isEmpty()) {
            return Outcome.outOfOrder("row " + id + " does not exist yet: retry until it is created");
        }
        long found = ((Number) current.get()).longValue();
        if (found > expectedVersion) {
            return Outcome.duplicate(
                    "already applied: the row is at version " + found + ", the message expected " + expectedVersion);
        }
        if (found < expectedVersion) {
            return Outcome.outOfOrder("the row is at version " + found + ", the message expects " + expectedVersion
                    + ": an earlier message has not applied yet, retry later");
        }
        return Outcome.outOfOrder("the row moved past version " + expectedVersion + " concurrently: retry");
    }

    /** The same in a transaction of its own: commit when final, roll back otherwise. */
    public Outcome apply(
            DataSource dataSource, Object id, long expectedVersion, Assignments also, SideEffect onApplied) {
        return Transactions.run(dataSource, c -> apply(c, id, expectedVersion, also, onApplied));
    }

    /** Builds a {@link VersionGuard}; names are checked as SQL identifiers. */
    public static final class Builder extends BusinessGuardBuilder<Builder> {
        private String versionColumn = "version";

        private Builder() {}

        /** An integer column. Default {@code version}. */
        public Builder versionColumn(String column) {
            this.versionColumn = Schema.identifier("versionColumn", column);
            return this;
        }

        public VersionGuard build() {
            return new VersionGuard(row("VersionGuard", versionColumn, "accounts"));
        }
    }
}
