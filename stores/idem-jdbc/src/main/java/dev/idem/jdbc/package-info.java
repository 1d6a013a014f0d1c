/**
 * Idem on plain JDBC for PostgreSQL, MariaDB/MySQL and H2: {@link dev.idem.jdbc.JdbcInbox} puts the dedup record in
 * the same transaction as the business write; {@link dev.idem.jdbc.JdbcStore} is a lease store for effects outside
 * the database (both use one table, whose DDL ships in {@code /dev/idem/jdbc/ddl/}); the business guards ({@link
 * dev.idem.jdbc.StateMachineGuard}, {@link dev.idem.jdbc.VersionGuard}, {@link dev.idem.jdbc.PreconditionGuard},
 * {@link dev.idem.jdbc.UniqueRowGuard}) let the business row guard itself; {@link
 * dev.idem.jdbc.JdbcNodeIdLeaseStore} leases message-id node ids from a table of its own.
 */
@NullMarked
package dev.idem.jdbc;

import org.jspecify.annotations.NullMarked;
