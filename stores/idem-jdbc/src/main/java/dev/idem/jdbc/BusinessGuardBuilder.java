package dev.idem.jdbc;

import dev.idem.ConfigurationException;
import org.jspecify.annotations.Nullable;

/**
 * The business table and key column every row guard needs. {@code B} is the concrete builder. Names are checked as
 * SQL identifiers at once.
 */
public abstract class BusinessGuardBuilder<B extends BusinessGuardBuilder<B>> {
    private @Nullable String table;
    private String idColumn = "id";
    private @Nullable String fingerprintColumn;

    BusinessGuardBuilder() {}

    /** Required: the business table, e.g. {@code orders} or {@code shop.orders}. */
    public B table(String table) {
        this.table = Schema.identifier("table", table);
        return self();
    }

    /** The key column. Default {@code id}. */
    public B idColumn(String column) {
        this.idColumn = Schema.identifier("idColumn", column);
        return self();
    }

    /**
     * A text column (e.g. {@code VARCHAR(128)}) in which each applied change records its event's fingerprint, so that
     * a later delivery that finds the change already made can tell the same event ({@code DUPLICATE}) from a
     * different one ({@code REJECTED}). Only the guard that supports it and the applies given a fingerprint use it.
     * Default none.
     */
    B fingerprintColumn(String column) {
        this.fingerprintColumn = Schema.identifier("fingerprintColumn", column);
        return self();
    }

    /** The guarded column of the configured table; refuses to build without a table. */
    GuardedRow row(String guard, String column, String exampleTable) {
        if (table == null) {
            throw new ConfigurationException(
                    "a " + guard + " needs the business table: call .table(\"" + exampleTable + "\")");
        }
        return new GuardedRow(table, idColumn, column, fingerprintColumn);
    }

    @SuppressWarnings("unchecked")
    private B self() {
        return (B) this;
    }
}
