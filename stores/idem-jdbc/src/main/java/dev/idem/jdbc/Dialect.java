package dev.idem.jdbc;

/**
 * The SQL dialects Idem's JDBC classes speak. Detected from the connection's product name ({@code
 * DatabaseMetaData.getDatabaseProductName()}) unless a builder's {@code dialect(...)} sets it.
 */
public enum Dialect {
    POSTGRESQL,
    /** MariaDB 10.5 or later (sequences, {@code INSERT ... RETURNING}). */
    MARIADB,
    /** MySQL 8: transactional mode only (no sequences for lease-mode fencing tokens). */
    MYSQL,
    /** H2 2.x. */
    H2;

    boolean mysqlFamily() {
        return this == MARIADB || this == MYSQL;
    }
}
