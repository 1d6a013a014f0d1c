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

    /**
     * The database's clock as an SQL expression in epoch milliseconds (UTC, whatever the session's time zone), for
     * statements that compare or stamp times on the database's clock rather than each client's.
     */
    public String nowMillis() {
        return switch (this) {
            case POSTGRESQL -> "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)";
            // UTC, not the session's local time: NOW() cannot tell the two occurrences of a repeated DST hour apart.
            case MARIADB, MYSQL -> "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000)";
            case H2 -> "CAST(EXTRACT(EPOCH FROM CURRENT_TIMESTAMP) * 1000 AS BIGINT)";
        };
    }

    boolean mysqlFamily() {
        return this == MARIADB || this == MYSQL;
    }
}
