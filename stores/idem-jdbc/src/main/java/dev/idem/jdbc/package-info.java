/**
 * JDBC stores for PostgreSQL, MariaDB/MySQL and H2: {@link dev.idem.jdbc.JdbcInbox} puts the dedup record in the
 * same transaction as the business write; {@link dev.idem.jdbc.JdbcStore} is a lease store for effects outside the
 * database. Both use one table, whose DDL ships in {@code /dev/idem/jdbc/ddl/}.
 */
@NullMarked
package dev.idem.jdbc;

import org.jspecify.annotations.NullMarked;
