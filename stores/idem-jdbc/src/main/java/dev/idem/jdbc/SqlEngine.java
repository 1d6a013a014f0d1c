package dev.idem.jdbc;

import dev.idem.ConfigurationException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Locale;
import java.util.regex.Pattern;

/** The databases Idem speaks to, told apart by the connection's product name. */
enum SqlEngine {
    POSTGRESQL,
    MYSQL,
    H2;

    private static final Pattern IDENTIFIER =
            Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}(\\.[A-Za-z_][A-Za-z0-9_]{0,62})?");

    static SqlEngine of(Connection c) throws SQLException {
        String product = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT);
        if (product.contains("postgres")) {
            return POSTGRESQL;
        }
        if (product.contains("mysql") || product.contains("mariadb")) {
            return MYSQL;
        }
        if (product.contains("h2")) {
            return H2;
        }
        throw new ConfigurationException(
                "database '" + product + "' is not supported: use PostgreSQL, MySQL," + " MariaDB or H2");
    }

    /** True when {@code e} says a unique key already holds the value. */
    static boolean isDuplicateKey(SQLException e) {
        return "23505".equals(e.getSQLState()) || e.getErrorCode() == 1062 || e.getErrorCode() == 23505;
    }

    /**
     * Checks a table or column name from configuration: letters, digits and underscores, optionally qualified by a
     * schema, so that no SQL can be injected through it.
     */
    static String identifier(String what, String name) {
        if (name == null || !IDENTIFIER.matcher(name).matches()) {
            throw new ConfigurationException(what + " '" + name + "' is not a valid SQL identifier: use letters,"
                    + " digits and underscores (optionally schema.name), at most 63 characters each");
        }
        return name;
    }
}
