package dev.idem.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The column of a business row that a guard changes with one conditional update, and reads back when the update
 * changed nothing. Names are checked SQL identifiers.
 */
record GuardedRow(String table, String idColumn, String column) {

    /**
     * {@code UPDATE table SET <set>, <also> WHERE idColumn = ? AND <condition>}, parameters bound in that order; true
     * when it changed the row.
     */
    boolean changed(
            Connection c,
            String set,
            List<@Nullable Object> setParams,
            Assignments also,
            Object id,
            String condition,
            List<@Nullable Object> conditionParams)
            throws SQLException {
        String sql = "UPDATE " + table + " SET " + set + also.sql() + " WHERE " + idColumn + " = ? AND " + condition;
        List<@Nullable Object> params = new ArrayList<>(setParams);
        params.addAll(also.values());
        params.add(id);
        params.addAll(conditionParams);
        return Statements.update(c, sql, params) == 1;
    }

    /** The column's current value; empty when the row does not exist. */
    Optional<Object> current(Connection c, Object id) throws SQLException {
        return Statements.queryValue(
                c, "SELECT " + column + " FROM " + table + " WHERE " + idColumn + " = ?", List.of(id));
    }
}
