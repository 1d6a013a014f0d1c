package dev.idem.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/** Bound-parameter statements on a caller's connection. */
final class Statements {
    private Statements() {}

    static int update(Connection c, String sql, List<@Nullable Object> params) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, params);
            return ps.executeUpdate();
        }
    }

    /** The first column of the first row, or empty when there is no row ({@code Optional.of(null)} impossible). */
    static Optional<Object> queryValue(Connection c, String sql, List<@Nullable Object> params) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, params);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                Object value = rs.getObject(1);
                return Optional.of(value == null ? NULL : value);
            }
        }
    }

    /** Stands for a SQL NULL read from an existing row. */
    static final Object NULL = new Object() {
        @Override
        public String toString() {
            return "NULL";
        }
    };

    private static void bind(PreparedStatement ps, List<@Nullable Object> params) throws SQLException {
        for (int i = 0; i < params.size(); i++) {
            ps.setObject(i + 1, params.get(i));
        }
    }
}
