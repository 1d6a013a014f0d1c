package dev.idem.jdbc;

import dev.idem.ConfigurationException;
import dev.idem.Outcome;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Conditional update on any expected value: "set balance from 500 to 600, only if it is 500".
 *
 * <pre>{@code
 * PreconditionGuard balances = PreconditionGuard.builder().table("accounts").column("balance").build();
 * Outcome o = balances.apply(connection, accountId, 500, 600, SideEffect.NONE);
 * }</pre>
 *
 * One row → {@code PROCESSED}. None → the current value is read and handed to a {@link Classifier}; the default
 * ({@link Classifier#newValueMeansApplied()}) says: row missing → {@code OUT_OF_ORDER}, already at the new value →
 * {@code DUPLICATE}, anything else → {@code REJECTED} naming both values. Supply your own where "not yet" can be
 * told from the value (e.g. a value still below the expected one). Immutable and thread-safe.
 */
public final class PreconditionGuard {

    /** Tells what a no-op conditional update means, from the current value (empty: no such row). */
    @FunctionalInterface
    public interface Classifier {
        Outcome classify(Optional<Object> current, Object expected, Object newValue);

        /** The row at the new value was already changed by this message; any other value is a conflict. */
        static Classifier newValueMeansApplied() {
            return (current, expected, newValue) -> {
                if (current.isEmpty()) {
                    return Outcome.outOfOrder("the row does not exist yet: retry until it is created");
                }
                if (sameValue(current.get(), newValue)) {
                    return Outcome.duplicate("already applied: the value is " + newValue);
                }
                if (sameValue(current.get(), expected)) {
                    return Outcome.outOfOrder("the value was " + expected + " but changed concurrently: retry");
                }
                return Outcome.rejected("precondition failed: expected " + expected + " (to set " + newValue
                        + ") but found " + current.get());
            };
        }
    }

    private final GuardedRow guarded;

    private PreconditionGuard(GuardedRow guarded) {
        this.guarded = guarded;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Sets the column to {@code newValue} if it holds {@code expected}, with the default classifier. */
    public Outcome apply(Connection c, Object id, Object expected, Object newValue, SideEffect onApplied)
            throws SQLException {
        return apply(c, id, expected, newValue, Assignments.of(), Classifier.newValueMeansApplied(), onApplied);
    }

    /** The full form: extra assignments and a classifier of your own. Commit is the caller's. */
    public Outcome apply(
            Connection c,
            Object id,
            Object expected,
            Object newValue,
            Assignments also,
            Classifier classifier,
            SideEffect onApplied)
            throws SQLException {
        OwnTransaction.requireTransaction(c, "PreconditionGuard");
        String column = guarded.column();
        if (guarded.changed(c, column + " = ?", List.of(newValue), also, id, column + " = ?", List.of(expected))) {
            onApplied.run(c);
            return Outcome.processed(column + " " + expected + " → " + newValue);
        }
        return classifier.classify(guarded.current(c, id), expected, newValue);
    }

    /** The default form in a transaction of its own: commit when final, roll back otherwise. */
    public Outcome apply(DataSource dataSource, Object id, Object expected, Object newValue, SideEffect onApplied) {
        return Transactions.run(dataSource, c -> apply(c, id, expected, newValue, onApplied));
    }

    static boolean sameValue(Object a, Object b) {
        if (a instanceof Number x && b instanceof Number y) {
            return new BigDecimal(x.toString()).compareTo(new BigDecimal(y.toString())) == 0;
        }
        return Objects.equals(a, b) || String.valueOf(a).equals(String.valueOf(b));
    }

    /** Builds a {@link PreconditionGuard}; names are checked as SQL identifiers. */
    public static final class Builder extends BusinessGuardBuilder<Builder> {
        private @Nullable String column;

        private Builder() {}

        /** Required: the guarded column. */
        public Builder column(String column) {
            this.column = Schema.identifier("column", column);
            return this;
        }

        public PreconditionGuard build() {
            if (column == null) {
                throw new ConfigurationException(
                        "a PreconditionGuard needs the guarded column: call .column(\"balance\")");
            }
            return new PreconditionGuard(row("PreconditionGuard", column, "accounts"));
        }
    }
}
