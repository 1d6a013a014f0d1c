package dev.idem.jdbc;

import dev.idem.Outcome;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The column of a business row that a guard changes with one conditional update, and reads back when the update
 * changed nothing; optionally the column that records the fingerprint of the event that changed it last. Names are
 * checked SQL identifiers.
 */
record GuardedRow(
        String table,
        String idColumn,
        String column,
        @Nullable String fingerprintColumn) {

    /** The guarded column's value and the fingerprint stored with it (null without a fingerprint column). */
    record Current(Object value, @Nullable String fingerprint) {}

    /**
     * {@code UPDATE table SET <set>, <also> [, fingerprintColumn = fingerprint] WHERE idColumn = ? AND <condition>},
     * parameters bound in that order; true when it changed the row.
     */
    boolean changed(
            Connection c,
            String set,
            List<@Nullable Object> setParams,
            Assignments also,
            @Nullable String fingerprint,
            Object id,
            String condition,
            List<@Nullable Object> conditionParams)
            throws SQLException {
        List<@Nullable Object> params = new ArrayList<>(setParams);
        params.addAll(also.values());
        String recordFingerprint = "";
        if (fingerprintColumn != null && fingerprint != null) {
            recordFingerprint = ", " + fingerprintColumn + " = ?";
            params.add(fingerprint);
        }
        params.add(id);
        params.addAll(conditionParams);
        String sql = "UPDATE " + table + " SET " + set + also.sql() + recordFingerprint + " WHERE " + idColumn
                + " = ? AND " + condition;
        return Statements.update(c, sql, params) == 1;
    }

    /** The column's current value (and stored fingerprint); empty when the row does not exist. */
    Optional<Current> current(Connection c, Object id) throws SQLException {
        String columns = fingerprintColumn == null ? column : column + ", " + fingerprintColumn;
        try (PreparedStatement ps =
                c.prepareStatement("SELECT " + columns + " FROM " + table + " WHERE " + idColumn + " = ?")) {
            ps.setObject(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                Object value = rs.getObject(1);
                String stored = fingerprintColumn == null ? null : rs.getString(2);
                return Optional.of(new Current(value == null ? Statements.NULL : value, stored));
            }
        }
    }

    /**
     * Runs {@code onApplied} after the guarded change applied; its outcome is the guard's ({@code reason} replaces
     * the default reason of a plain {@code Outcome.processed()}).
     */
    static Outcome applied(Connection c, TransactionalHandler onApplied, String reason) throws Exception {
        Outcome effect = onApplied.handle(c);
        if (effect == null) {
            throw new NullPointerException("onApplied must return an Outcome, not null");
        }
        return effect.type() == Outcome.Type.PROCESSED && effect.reason().equals("applied")
                ? effect.withReason(reason)
                : effect;
    }

    /**
     * A duplicate whose stored fingerprint shows another event: {@code REJECTED}. Null when the fingerprints agree or
     * either is unknown.
     */
    static @Nullable Outcome otherEvent(@Nullable String fingerprint, Current current, String what) {
        if (fingerprint == null
                || current.fingerprint() == null
                || current.fingerprint().equals(fingerprint)) {
            return null;
        }
        return Outcome.rejected(what + " was reached by a different event (stored fingerprint "
                + current.fingerprint() + ", this event's " + fingerprint + "): the same version or transition was"
                + " produced twice for different changes; the message cannot apply as it is");
    }
}
