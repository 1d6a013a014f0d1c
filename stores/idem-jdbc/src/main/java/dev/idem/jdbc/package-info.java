/**
 * Idem on plain JDBC (PostgreSQL, MySQL/MariaDB, H2): the transactional dedup record, the lease store and the
 * business guards ({@link dev.idem.jdbc.StateMachineGuard}, {@link dev.idem.jdbc.VersionGuard}, {@link
 * dev.idem.jdbc.PreconditionGuard}, {@link dev.idem.jdbc.UniqueRowGuard}).
 */
@NullMarked
package dev.idem.jdbc;

import org.jspecify.annotations.NullMarked;
