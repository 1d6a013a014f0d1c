package dev.idem.jdbc;

import dev.idem.Outcome;
import dev.idem.StateMachine;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Applies state-machine events to rows of a business table with one conditional update, so the row guards itself:
 *
 * <pre>{@code
 * StateMachineGuard orders = StateMachineGuard.builder(machine).table("orders").build();
 * Outcome o = orders.apply(connection, orderId, "PAY", Assignments.of().set("paid_at", now),
 *         c -> debit(c, customer, amount));                       // runs only if PENDING → PAID applied
 * }</pre>
 *
 * The update is {@code UPDATE orders SET status = :to [, more] WHERE id = :id AND status IN (:from…)}. One row →
 * the side effect runs in the same transaction and the outcome is {@code PROCESSED}; no row → the current state is
 * read and {@link StateMachine#classify} says {@code DUPLICATE}, {@code OUT_OF_ORDER} or {@code REJECTED}.
 * Immutable and thread-safe.
 */
public final class StateMachineGuard {
    private final StateMachine machine;
    private final GuardedRow status;

    private StateMachineGuard(StateMachine machine, GuardedRow status) {
        this.machine = machine;
        this.status = status;
    }

    public static Builder builder(StateMachine machine) {
        return new Builder(machine);
    }

    public StateMachine machine() {
        return machine;
    }

    /** Applies {@code event} to row {@code id} on the caller's connection and transaction. */
    public Outcome apply(Connection c, Object id, String event) throws SQLException {
        return apply(c, id, event, Assignments.of(), SideEffect.NONE);
    }

    /**
     * Applies {@code event} to row {@code id}, setting {@code also} with the status and running {@code onApplied}
     * (same connection, same transaction) only when the transition applied. Commit is the caller's.
     */
    public Outcome apply(Connection c, Object id, String event, Assignments also, SideEffect onApplied)
            throws SQLException {
        OwnTransaction.requireTransaction(c, "StateMachineGuard");
        String target = machine.targetOf(event);
        List<String> from = new ArrayList<>(machine.sourcesOf(event));
        String inSources = status.column() + " IN (" + String.join(", ", Collections.nCopies(from.size(), "?")) + ")";
        if (status.changed(c, status.column() + " = ?", List.of(target), also, id, inSources, List.copyOf(from))) {
            onApplied.run(c);
            return Outcome.processed(event + ": " + String.join("|", from) + " → " + target);
        }
        return machine.classify(
                event, status.current(c, id).map(String::valueOf).orElse(null));
    }

    /** Applies {@code event} in a transaction of its own, running {@code onApplied} only if it applied. */
    public Outcome apply(DataSource dataSource, Object id, String event, SideEffect onApplied) {
        return apply(dataSource, id, event, Assignments.of(), onApplied);
    }

    /**
     * Like {@link #apply(Connection, Object, String, Assignments, SideEffect)} in a transaction of its own: commits
     * when the outcome is final ({@code PROCESSED}, {@code DUPLICATE}), rolls back otherwise.
     */
    public Outcome apply(DataSource dataSource, Object id, String event, Assignments also, SideEffect onApplied) {
        return Transactions.run(dataSource, c -> apply(c, id, event, also, onApplied));
    }

    /** Builds a {@link StateMachineGuard}; names are checked as SQL identifiers. */
    public static final class Builder extends BusinessGuardBuilder<Builder> {
        private final StateMachine machine;
        private String statusColumn = "status";

        private Builder(StateMachine machine) {
            this.machine = Objects.requireNonNull(machine, "machine");
        }

        /** The column holding the state. Default {@code status}. */
        public Builder statusColumn(String column) {
            this.statusColumn = Schema.identifier("statusColumn", column);
            return this;
        }

        public StateMachineGuard build() {
            return new StateMachineGuard(machine, row("StateMachineGuard", statusColumn, "orders"));
        }
    }
}
