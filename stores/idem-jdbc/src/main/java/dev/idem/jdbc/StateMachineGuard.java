package dev.idem.jdbc;

import dev.idem.Fingerprint;
import dev.idem.Outcome;
import dev.idem.StateMachine;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * Applies state-machine events to rows of a business table with one conditional update, so the row guards itself:
 *
 * <pre>{@code
 * StateMachineGuard orders = StateMachineGuard.builder(machine).table("orders").build();
 * Outcome o = orders.apply(connection, orderId, "PAY", Assignments.of().set("paid_at", now),
 *         c -> debit(c, customer, amount));                       // runs only if PENDING → PAID applied
 * Outcome inItsOwnTransaction = OwnTransaction.of(dataSource).run(c -> orders.apply(c, orderId, "SHIP"));
 * }</pre>
 *
 * The update is {@code UPDATE orders SET status = :to [, more] WHERE id = :id AND status IN (:from…)}. One row →
 * the side effect runs in the same transaction and the outcome is {@code PROCESSED}; no row → the current state is
 * read and {@link StateMachine#classify} says {@code DUPLICATE}, {@code OUT_OF_ORDER} or {@code REJECTED}.
 *
 * <p>{@code DUPLICATE} means "the row is at or past this event's target state". Without a fingerprint column that
 * can hide a different event: one that reached the same state (a second {@code PAY} with another payment) or one
 * that a bypass transition skipped (a {@code PAY} after the order went {@code PENDING → CANCELLED → …}; its side
 * effect never runs). With {@link Builder#fingerprintColumn(String)} and a fingerprint per event, a row found
 * <em>in</em> the target state with another event's fingerprint is {@code REJECTED}; a row already past the target
 * state still answers {@code DUPLICATE} (the column holds the later event's fingerprint).
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
    public Outcome apply(Connection c, Object id, String event) throws Exception {
        return apply(c, id, event, null, Assignments.of(), TransactionalHandler.NONE);
    }

    /**
     * Applies {@code event} to row {@code id}, setting {@code also} with the status and running {@code onApplied}
     * (same connection, same transaction) only when the transition applied; its outcome is the guard's. Commit is
     * the caller's (a connection in auto-commit mode is refused).
     */
    public Outcome apply(Connection c, Object id, String event, Assignments also, TransactionalHandler onApplied)
            throws Exception {
        return apply(c, id, event, null, also, onApplied);
    }

    /**
     * As {@link #apply(Connection, Object, String, Assignments, TransactionalHandler)}, recording {@code
     * fingerprint} (the event's, e.g. {@code Fingerprint.of(payload)}) in the {@linkplain
     * Builder#fingerprintColumn(String) fingerprint column}: a later delivery that finds the row in this event's
     * target state with another event's fingerprint is {@code REJECTED}, not {@code DUPLICATE}.
     */
    public Outcome apply(
            Connection c,
            Object id,
            String event,
            @Nullable String fingerprint,
            Assignments also,
            TransactionalHandler onApplied)
            throws Exception {
        OwnTransaction.requireTransaction(c, "StateMachineGuard");
        String checked = Fingerprint.validate(fingerprint);
        String target = machine.targetOf(event);
        List<String> from = new ArrayList<>(machine.sourcesOf(event));
        String inSources = status.column() + " IN (" + String.join(", ", Collections.nCopies(from.size(), "?")) + ")";
        if (status.changed(
                c, status.column() + " = ?", List.of(target), also, checked, id, inSources, List.copyOf(from))) {
            return GuardedRow.applied(c, onApplied, event + ": " + String.join("|", from) + " → " + target);
        }
        Optional<GuardedRow.Current> current = status.current(c, id);
        Outcome outcome = machine.classify(
                event, current.map(r -> String.valueOf(r.value())).orElse(null));
        if (outcome.type() == Outcome.Type.DUPLICATE
                && target.equals(String.valueOf(current.orElseThrow().value()))) {
            Outcome other = GuardedRow.otherEvent(checked, current.get(), "state " + target);
            return other == null ? outcome : other;
        }
        return outcome;
    }

    /** Builds a {@link StateMachineGuard}; names are checked as SQL identifiers. */
    public static final class Builder extends BusinessGuardBuilder<Builder> {
        private final StateMachine machine;
        private String statusColumn = "status";

        private Builder(StateMachine machine) {
            this.machine = Objects.requireNonNull(machine, "machine");
        }

        /**
         * The column in which each applied transition records its event's fingerprint; see {@link
         * StateMachineGuard#apply(Connection, Object, String, String, Assignments, TransactionalHandler)}. Default
         * none.
         */
        @Override
        public Builder fingerprintColumn(String column) {
            return super.fingerprintColumn(column);
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
