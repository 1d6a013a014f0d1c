package dev.idem.jdbc;

import dev.idem.ConfigurationException;
import dev.idem.Outcome;
import java.math.BigDecimal;
import java.sql.Connection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * Conditional update on any expected value: "set balance from 500 to 600, only if it is 500".
 *
 * <pre>{@code
 * PreconditionGuard balances = PreconditionGuard.builder().table("accounts").column("balance").build();
 * Outcome o = balances.apply(connection, accountId, Change.from(500).to(600), TransactionalHandler.NONE);
 * }</pre>
 *
 * One row → {@code PROCESSED}. None → the current value is read and handed to a {@link Classifier}; the default
 * ({@link Classifier#newValueMeansApplied()}) says: row missing → {@code OUT_OF_ORDER}, already at the new value →
 * {@code DUPLICATE}, anything else → {@code REJECTED} naming both values. Supply your own where "not yet" can be
 * told from the value (e.g. a value still below the expected one). Immutable and thread-safe.
 */
public final class PreconditionGuard {

    /** The change a message asks for: the value it expects and the one it sets. Immutable. */
    public static final class Change {
        private final Object expected;
        private final Object newValue;

        private Change(Object expected, Object newValue) {
            this.expected = expected;
            this.newValue = newValue;
        }

        /** The value the column must hold for the change to apply; {@link From#to(Object)} completes the change. */
        public static From from(Object expected) {
            return new From(Objects.requireNonNull(expected, "expected"));
        }

        public Object expected() {
            return expected;
        }

        public Object newValue() {
            return newValue;
        }

        @Override
        public String toString() {
            return expected + " → " + newValue;
        }
    }

    /** The first half of a {@link Change}. */
    public static final class From {
        private final Object expected;

        private From(Object expected) {
            this.expected = expected;
        }

        public Change to(Object newValue) {
            return new Change(expected, Objects.requireNonNull(newValue, "newValue"));
        }
    }

    /** Tells what a no-op conditional update means, from the current value (empty: no such row). */
    @FunctionalInterface
    public interface Classifier {
        Outcome classify(Optional<Object> current, Change change);

        /** The row at the new value was already changed by this message; any other value is a conflict. */
        static Classifier newValueMeansApplied() {
            return (current, change) -> {
                if (current.isEmpty()) {
                    return Outcome.outOfOrder("the row does not exist yet: retry until it is created");
                }
                if (sameValue(current.get(), change.newValue())) {
                    return Outcome.duplicate("already applied: the value is " + change.newValue());
                }
                if (sameValue(current.get(), change.expected())) {
                    return Outcome.outOfOrder(
                            "the value was " + change.expected() + " but changed concurrently: retry");
                }
                return Outcome.rejected("precondition failed: expected " + change.expected() + " (to set "
                        + change.newValue() + ") but found " + current.get());
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

    /** Applies {@code change} to row {@code id} with the default classifier. */
    public Outcome apply(Connection c, Object id, Change change, TransactionalHandler onApplied) throws Exception {
        return apply(c, id, change, Assignments.of(), Classifier.newValueMeansApplied(), onApplied);
    }

    /**
     * The full form: extra assignments and a classifier of your own. {@code onApplied} runs only when the change
     * applied, and its outcome is the guard's. Commit is the caller's (a connection in auto-commit mode is refused).
     */
    public Outcome apply(
            Connection c,
            Object id,
            Change change,
            Assignments also,
            Classifier classifier,
            TransactionalHandler onApplied)
            throws Exception {
        OwnTransaction.requireTransaction(c, "PreconditionGuard");
        String column = guarded.column();
        if (guarded.changed(
                c,
                column + " = ?",
                List.of(change.newValue()),
                also,
                null,
                id,
                column + " = ?",
                List.of(change.expected()))) {
            return GuardedRow.applied(c, onApplied, column + " " + change);
        }
        return classifier.classify(guarded.current(c, id).map(GuardedRow.Current::value), change);
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
