package dev.idem.jdbc;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Extra columns a guarded update changes together with the guarded one, e.g. {@code
 * Assignments.of().set("paid_at", now).add("balance", -amount)}. Column names are checked as SQL identifiers;
 * values are always bound parameters. Immutable.
 */
public final class Assignments {
    private static final Assignments NONE = new Assignments(List.of());

    private final List<Assignment> items;

    private record Assignment(
            String column, boolean increment, @Nullable Object value) {}

    private Assignments(List<Assignment> items) {
        this.items = Collections.unmodifiableList(items);
    }

    /** No extra column. */
    public static Assignments of() {
        return NONE;
    }

    /** Also sets {@code column = value}. */
    public Assignments set(String column, @Nullable Object value) {
        return with(new Assignment(Schema.identifier("column", column), false, value));
    }

    /** Also sets {@code column = column + delta}. */
    public Assignments add(String column, Number delta) {
        return with(new Assignment(Schema.identifier("column", column), true, delta));
    }

    private Assignments with(Assignment a) {
        List<Assignment> next = new ArrayList<>(items);
        next.add(a);
        return new Assignments(next);
    }

    /** {@code ", a = ?, b = b + ?"}: appended to a SET clause. */
    String sql() {
        StringBuilder sb = new StringBuilder();
        for (Assignment a : items) {
            sb.append(", ").append(a.column()).append(" = ");
            sb.append(a.increment() ? a.column() + " + ?" : "?");
        }
        return sb.toString();
    }

    List<@Nullable Object> values() {
        List<@Nullable Object> values = new ArrayList<>();
        items.forEach(a -> values.add(a.value()));
        return values;
    }
}
