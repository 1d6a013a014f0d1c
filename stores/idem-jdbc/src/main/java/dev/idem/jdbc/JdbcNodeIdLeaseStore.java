package dev.idem.jdbc;

import dev.idem.ConfigurationException;
import dev.idem.IdempotencyException;
import dev.idem.IdempotencyKey;
import dev.idem.StoreUnavailableException;
import dev.idem.id.spi.NodeIdGrant;
import dev.idem.id.spi.NodeIdLeaseStore;
import dev.idem.spi.UpdateResult;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Node-id leases for {@link dev.idem.id.MessageIdGenerator}s in a PostgreSQL, MariaDB or H2 table: one row per (id
 * space, node id) holding the owner, the lease's end and the high-water mark. The mark survives the lease, a release
 * and a restart of every generator, so a node restarting with its clock behind cannot repeat an id.
 *
 * <pre>{@code
 * NodeIdLeaseStore leases = JdbcNodeIdLeaseStore.builder(dataSource).build();   // table idem_node_ids
 * MessageIdGenerator ids = MessageIdGenerator.builder().prefix("ORDER").nodeIdLease(leases, "orders").build();
 * }</pre>
 *
 * <p>Every statement runs in auto-commit and changes one row, so no lock outlives a statement and no two calls can
 * deadlock. {@code acquire} reads the space's rows in node-id order, then takes the lowest free or expired node id
 * with a conditional update (which checks, on the row's current version, that it is still free and that its mark is
 * the one read) or, for a node id without a row, a conflict-free insert; a call that loses a race to another one
 * reads again. {@code renew} and {@code release} are single owner-checked updates; the mark only grows, except that a
 * release lowers it to the highest timestamp really issued (never below the mark granted with the lease).
 *
 * <p>Lease ends follow the builder's clock, or the database's with {@link Builder#useDatabaseClock(boolean)}. A
 * database that cannot be reached raises {@link StoreUnavailableException}; a missing table raises {@link
 * ConfigurationException} naming the DDL to run.
 *
 * <p>Immutable and thread-safe. The store does not own the {@link DataSource}: {@link #close()} does not close it.
 */
public final class JdbcNodeIdLeaseStore implements NodeIdLeaseStore {
    private static final int ACQUIRE_ATTEMPTS = 100;
    private static final int OWNER_LENGTH = 64;

    private final DataSource dataSource;
    private final Dialect dialect;
    private final String table;
    private final Clock clock;
    private final boolean databaseClock;
    private final String description;
    private final String selectRows;
    private final String insertFree;
    private final String take;
    private final String renew;
    private final String release;
    private final String selectOwner;
    private volatile boolean closed;

    private JdbcNodeIdLeaseStore(Builder b, Dialect dialect) {
        this.dataSource = b.dataSource;
        this.dialect = dialect;
        this.table = b.table;
        this.clock = b.clock;
        this.databaseClock = b.databaseClock;
        this.description = dialect.name().toLowerCase(Locale.ROOT) + " " + table;
        String t = table;
        this.selectRows = "SELECT node_id, owner_token, expires_at, high_water FROM " + t
                + " WHERE id_space = ? AND node_id <= ? ORDER BY node_id";
        String columns =
                " (id_space, node_id, owner_token, expires_at, high_water, granted_mark) VALUES (?, ?, ?, ?, ?, 0)";
        this.insertFree = switch (dialect) {
            case POSTGRESQL -> "INSERT INTO " + t + columns + " ON CONFLICT DO NOTHING";
            case MARIADB, MYSQL -> "INSERT IGNORE INTO " + t + columns;
            case H2 -> "INSERT INTO " + t + columns;
        };
        // granted_mark is assigned before high_water: MariaDB/MySQL evaluate SET assignments left to right.
        this.take = "UPDATE " + t + " SET owner_token = ?, expires_at = ?, granted_mark = high_water,"
                + " high_water = GREATEST(high_water, ?) WHERE id_space = ? AND node_id = ? AND high_water = ?"
                + " AND (owner_token IS NULL OR expires_at <= ?)";
        this.renew = "UPDATE " + t + " SET expires_at = ?, high_water = GREATEST(high_water, ?)"
                + " WHERE id_space = ? AND node_id = ? AND owner_token = ?";
        this.release = "UPDATE " + t + " SET owner_token = NULL, expires_at = ?,"
                + " high_water = GREATEST(granted_mark, ?), granted_mark = GREATEST(granted_mark, ?)"
                + " WHERE id_space = ? AND node_id = ? AND owner_token = ?";
        this.selectOwner = "SELECT owner_token FROM " + t + " WHERE id_space = ? AND node_id = ?";
    }

    /** A builder for a store on {@code dataSource} (any pool; the store borrows a connection per call). */
    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    @Override
    public Optional<NodeIdGrant> acquire(
            String space, String owner, int maxNodeId, Duration lease, Instant reservedUntil) {
        checkArguments(space, owner);
        if (maxNodeId < 0) {
            throw new IllegalArgumentException("maxNodeId must not be negative, got " + maxNodeId);
        }
        long leaseMillis = leaseMillis(lease);
        long reserved = reservedUntil.toEpochMilli();
        return run("acquire a node id of space '" + space + "'", c -> {
            for (int attempt = 0; attempt < ACQUIRE_ATTEMPTS; attempt++) {
                long now = now(c);
                Candidate candidate = lowestFree(c, space, maxNodeId, now);
                if (candidate == null) {
                    return Optional.empty();
                }
                long expiresAt = now + leaseMillis;
                try {
                    boolean taken = candidate.mark() == null
                            ? insert(c, space, candidate.nodeId(), owner, expiresAt, Math.max(0, reserved))
                            : take(c, space, candidate.nodeId(), owner, expiresAt, reserved, candidate.mark(), now);
                    if (taken) {
                        return Optional.of(new NodeIdGrant(
                                candidate.nodeId(),
                                owner,
                                Instant.ofEpochMilli(Objects.requireNonNullElse(candidate.mark(), 0L)),
                                Instant.ofEpochMilli(expiresAt)));
                    }
                } catch (SQLException e) {
                    if (!SqlErrors.isDeadlock(e)) {
                        throw e;
                    }
                }
            }
            throw new StoreUnavailableException(
                    description,
                    "acquiring a node id of space '" + space + "' lost " + ACQUIRE_ATTEMPTS
                            + " races in a row to other generators; retry later",
                    null);
        });
    }

    /** A node id to try: a row to take over ({@code mark} is its high-water mark), or one without a row. */
    private record Candidate(int nodeId, @Nullable Long mark) {}

    /** The lowest node id that is free, expired or has no row yet; null when all are held by live leases. */
    private @Nullable Candidate lowestFree(Connection c, String space, int maxNodeId, long now) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(selectRows)) {
            ps.setString(1, space);
            ps.setInt(2, maxNodeId);
            try (ResultSet rs = ps.executeQuery()) {
                int expected = 0;
                while (rs.next()) {
                    int nodeId = rs.getInt(1);
                    if (nodeId > expected) {
                        return new Candidate(expected, null);
                    }
                    String holder = rs.getString(2);
                    if (holder == null || rs.getLong(3) <= now) {
                        return new Candidate(nodeId, rs.getLong(4));
                    }
                    expected = nodeId + 1;
                }
                return expected <= maxNodeId ? new Candidate(expected, null) : null;
            }
        }
    }

    private boolean insert(Connection c, String space, int nodeId, String owner, long expiresAt, long mark)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(insertFree)) {
            ps.setString(1, space);
            ps.setInt(2, nodeId);
            ps.setString(3, owner);
            ps.setLong(4, expiresAt);
            ps.setLong(5, mark);
            return ps.executeUpdate() == 1;
        } catch (SQLException e) {
            // H2 has no conflict-ignoring insert: another generator inserted the row first.
            if (dialect == Dialect.H2 && SqlErrors.isDuplicateKey(e)) {
                return false;
            }
            throw e;
        }
    }

    private boolean take(
            Connection c,
            String space,
            int nodeId,
            String owner,
            long expiresAt,
            long reserved,
            long markRead,
            long now)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(take)) {
            ps.setString(1, owner);
            ps.setLong(2, expiresAt);
            ps.setLong(3, reserved);
            ps.setString(4, space);
            ps.setInt(5, nodeId);
            ps.setLong(6, markRead);
            ps.setLong(7, now);
            return ps.executeUpdate() == 1;
        }
    }

    @Override
    public UpdateResult renew(String space, int nodeId, String owner, Duration lease, Instant reservedUntil) {
        checkArguments(space, owner);
        long leaseMillis = leaseMillis(lease);
        return run("renew node id " + nodeId + " of space '" + space + "'", c -> {
            try (PreparedStatement ps = c.prepareStatement(renew)) {
                ps.setLong(1, now(c) + leaseMillis);
                ps.setLong(2, reservedUntil.toEpochMilli());
                ps.setString(3, space);
                ps.setInt(4, nodeId);
                ps.setString(5, owner);
                return ps.executeUpdate() == 1 ? UpdateResult.APPLIED : missed(c, space, nodeId, owner);
            }
        });
    }

    @Override
    public UpdateResult release(String space, int nodeId, String owner, Instant highestIssued) {
        checkArguments(space, owner);
        return run("release node id " + nodeId + " of space '" + space + "'", c -> {
            try (PreparedStatement ps = c.prepareStatement(release)) {
                ps.setLong(1, now(c));
                ps.setLong(2, highestIssued.toEpochMilli());
                ps.setLong(3, highestIssued.toEpochMilli());
                ps.setString(4, space);
                ps.setInt(5, nodeId);
                ps.setString(6, owner);
                return ps.executeUpdate() == 1 ? UpdateResult.APPLIED : missed(c, space, nodeId, owner);
            }
        });
    }

    /**
     * Why an owner-checked update counted no row. A driver that counts changed rather than matched rows (MySQL's
     * {@code useAffectedRows=true}) reports 0 for an update that found its row already as written: still applied.
     */
    private UpdateResult missed(Connection c, String space, int nodeId, String owner) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(selectOwner)) {
            ps.setString(1, space);
            ps.setInt(2, nodeId);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return UpdateResult.NOT_FOUND;
                }
                return owner.equals(rs.getString(1)) ? UpdateResult.APPLIED : UpdateResult.NOT_OWNER;
            }
        }
    }

    private static void checkArguments(String space, String owner) {
        IdempotencyKey.validateNamespace(space);
        if (owner.isEmpty() || owner.length() > OWNER_LENGTH) {
            throw new IllegalArgumentException(
                    "owner must be 1 to " + OWNER_LENGTH + " characters (the column's width), got " + owner.length());
        }
    }

    private static long leaseMillis(Duration lease) {
        if (lease.isNegative() || lease.isZero()) {
            throw new IllegalArgumentException("lease must be positive, got " + lease);
        }
        return lease.toMillis();
    }

    private long now(Connection c) throws SQLException {
        return databaseClock ? Sql.databaseNowMillis(dialect, c) : clock.millis();
    }

    @Override
    public String describe() {
        return description;
    }

    /** Marks the store closed: later calls throw {@link StoreUnavailableException}. The data source stays open. */
    @Override
    public void close() {
        closed = true;
    }

    @FunctionalInterface
    private interface Work<T> {
        T run(Connection c) throws SQLException;
    }

    /**
     * Runs {@code work} on a borrowed connection in auto-commit: each statement commits at once, and each read sees
     * the latest committed rows (a transaction's snapshot would hide the rows of a race it lost).
     */
    private <T> T run(String what, Work<T> work) {
        if (closed) {
            throw new StoreUnavailableException(description, "the store is closed", null);
        }
        try {
            return AutoCommit.run(dataSource, work::run);
        } catch (SQLException e) {
            throw translate(e, what);
        }
    }

    private IdempotencyException translate(SQLException e, String what) {
        if (SqlErrors.isMissingTable(e)) {
            return new ConfigurationException(
                    description + ": table " + table + " does not exist (" + e.getMessage() + "): create it with the"
                            + " DDL in the resource " + Schema.ddlResource(dialect) + " (also in the README, section"
                            + " JDBC), or set createTableIfMissing(true)",
                    e);
        }
        return new StoreUnavailableException(
                description, what + " failed (SQLState " + e.getSQLState() + "): " + e.getMessage(), e);
    }

    /**
     * Builds a {@link JdbcNodeIdLeaseStore}. Each setter checks its value at once; {@link #build()} detects the
     * dialect (one connection) unless it was set, and creates the table if asked to.
     */
    public static final class Builder extends JdbcBuilder<Builder> {

        private Builder(DataSource dataSource) {
            super(dataSource, Schema.DEFAULT_NODE_ID_TABLE);
        }

        public JdbcNodeIdLeaseStore build() {
            String store = "jdbc " + table;
            Dialect d = resolveDialect(store);
            if (createTableIfMissing) {
                Schema.create(dataSource, d, Schema.DEFAULT_NODE_ID_TABLE, table, store);
            }
            return new JdbcNodeIdLeaseStore(this, d);
        }
    }
}
