package dev.idem.jdbc;

import dev.idem.Fingerprint;
import dev.idem.Outcome;
import java.sql.Connection;
import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * Optimistic-lock guard: a message that carries the version it was produced against applies once, with {@code
 * UPDATE t SET version = version + 1 [, more] WHERE id = ? AND version = ?}.
 *
 * <pre>{@code
 * VersionGuard accounts = VersionGuard.builder().table("accounts").build();
 * Outcome o = accounts.apply(connection, accountId, message.version(), Assignments.of().add("balance", -amount),
 *         TransactionalHandler.NONE);
 * }</pre>
 *
 * One row → {@code PROCESSED}; none → the version is read: higher than expected → {@code DUPLICATE} (applied
 * before), lower → {@code OUT_OF_ORDER} (an earlier message has not applied yet), row missing → {@code
 * OUT_OF_ORDER}.
 *
 * <p>{@code DUPLICATE} means "the row is past the expected version". Without a fingerprint column that can hide a
 * different event written against the same version (two producers each read version 4 and send a change: the second
 * is answered {@code DUPLICATE} and its change is lost). With {@link Builder#fingerprintColumn(String)} and a
 * fingerprint per event, the row at exactly {@code expected + 1} tells: another event's fingerprint is {@code
 * REJECTED}. A row further ahead still answers {@code DUPLICATE} (the column holds a later event's). Immutable and
 * thread-safe.
 */
public final class VersionGuard {
    private final GuardedRow version;

    private VersionGuard(GuardedRow version) {
        this.version = version;
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * Applies the change to row {@code id} if it is at {@code expectedVersion}, on the caller's transaction (a
     * connection in auto-commit mode is refused), running {@code onApplied} only then; its outcome is the guard's.
     */
    public Outcome apply(
            Connection c, Object id, long expectedVersion, Assignments also, TransactionalHandler onApplied)
            throws Exception {
        return apply(c, id, expectedVersion, null, also, onApplied);
    }

    /**
     * As {@link #apply(Connection, Object, long, Assignments, TransactionalHandler)}, recording {@code fingerprint}
     * (the event's) in the {@linkplain Builder#fingerprintColumn(String) fingerprint column}: a later delivery that
     * finds the row at exactly {@code expectedVersion + 1} with another event's fingerprint is {@code REJECTED} (a
     * different change was made against the same version: a lost update), not {@code DUPLICATE}.
     */
    public Outcome apply(
            Connection c,
            Object id,
            long expectedVersion,
            @Nullable String fingerprint,
            Assignments also,
            TransactionalHandler onApplied)
            throws Exception {
        OwnTransaction.requireTransaction(c, "VersionGuard");
        String checked = Fingerprint.validate(fingerprint);
        String column = version.column();
        if (version.changed(
                c,
                column + " = " + column + " + 1",
                List.of(),
                also,
                checked,
                id,
                column + " = ?",
                List.of(expectedVersion))) {
            return GuardedRow.applied(c, onApplied, "version " + expectedVersion + " → " + (expectedVersion + 1));
        }
        Optional<GuardedRow.Current> current = version.current(c, id);
        if (current.isEmpty()) {
            return Outcome.outOfOrder("row " + id + " does not exist yet: retry until it is created");
        }
        long found = ((Number) current.get().value()).longValue();
        if (found == expectedVersion + 1) {
            Outcome other = GuardedRow.otherEvent(checked, current.get(), "version " + found);
            if (other != null) {
                return other;
            }
        }
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

    /** Builds a {@link VersionGuard}; names are checked as SQL identifiers. */
    public static final class Builder extends BusinessGuardBuilder<Builder> {
        private String versionColumn = "version";

        private Builder() {}

        /**
         * The column in which each applied change records its event's fingerprint; see {@link
         * VersionGuard#apply(Connection, Object, long, String, Assignments, TransactionalHandler)}. Default none.
         */
        @Override
        public Builder fingerprintColumn(String column) {
            return super.fingerprintColumn(column);
        }

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
