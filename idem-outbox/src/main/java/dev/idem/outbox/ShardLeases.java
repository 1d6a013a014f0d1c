package dev.idem.outbox;

import dev.idem.ConfigurationException;
import dev.idem.jdbc.Dialect;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLIntegrityConstraintViolationException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * Which shards this relay owns: one lease row per shard in {@code <table>_shards}, each taken only when free or
 * expired, renewed by its owner, released to balance (each live relay, seen by its heartbeat in {@code
 * <table>_relays}, holds its fair share) and on close. A key's messages belong to one shard, so only one relay at a
 * time publishes them while leases hold. Not thread-safe: the relay's one thread uses it.
 *
 * <p>Two clocks, so that no relay's wall clock decides ownership: every lease end is stamped and compared on the
 * database's clock ({@link OutboxSql}), and this relay's own "do I still hold them" deadline runs on its monotonic
 * clock from before the renewal was sent, which is no later than the end the database stamped. A wall clock that steps
 * either way changes neither.
 */
final class ShardLeases {
    /** The shards this relay owns and until when its leases surely hold (on its monotonic clock, in nanoseconds). */
    record Owned(List<Integer> shards, long validUntilNanos) {
        static final Owned NONE = new Owned(List.of(), Long.MIN_VALUE);
    }

    private final RelayDatabase db;
    private final OutboxSql sql;
    private final String relayId;
    private final int shardCount;
    private final Duration lease;
    private final LongSupplier nanoTime;
    private Owned owned = Owned.NONE;
    private boolean renewed;
    private long renewAtNanos;

    ShardLeases(
            RelayDatabase db, OutboxSql sql, String relayId, int shardCount, Duration lease, LongSupplier nanoTime) {
        this.db = db;
        this.sql = sql;
        this.relayId = relayId;
        this.shardCount = shardCount;
        this.lease = lease;
        this.nanoTime = nanoTime;
    }

    /** Creates the missing shard rows and checks that the table has as many shards as this relay expects. */
    void prepare() {
        long count = db.run("preparing the shards", c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.addShard())) {
                for (int shard = 0; shard < shardCount; shard++) {
                    ps.setInt(1, shard);
                    if (sql.dialect == Dialect.H2) {
                        ps.setInt(2, shard);
                    }
                    try {
                        ps.executeUpdate();
                    } catch (SQLIntegrityConstraintViolationException e) {
                        // H2: another relay inserted it between our NOT EXISTS and our insert
                    }
                }
            }
            try (PreparedStatement ps = c.prepareStatement(sql.countShards());
                    ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        });
        if (count != shardCount) {
            throw new ConfigurationException("table " + sql.shards + " has " + count + " shards, this relay expects "
                    + shardCount + ": every relay of one outbox table must set the same shards(...) (changing it needs"
                    + " every relay stopped and the shard table emptied)");
        }
    }

    /** True when the next {@link #current()} renews (and may rebalance) the leases. */
    boolean renewalDue() {
        return renewalDue(nanoTime.getAsLong());
    }

    private boolean renewalDue(long nowNanos) {
        return !renewed || nowNanos - renewAtNanos >= 0;
    }

    /** How long until {@link #current()} renews: zero when it is due. */
    Duration untilRenewal() {
        if (!renewed) {
            return Duration.ZERO;
        }
        return Duration.ofNanos(Math.max(0, renewAtNanos - nanoTime.getAsLong()));
    }

    /** The shards owned now: renews, rebalances and takes free shards when a quarter of the lease has passed. */
    Owned current() {
        long sentNanos = nanoTime.getAsLong();
        if (!renewalDue(sentNanos)) {
            return owned;
        }
        long leaseMillis = lease.toMillis();
        List<Integer> mine = db.run("renewing the shard leases", c -> {
            RelayDatabase.update(c, sql.heartbeat(), List.of(relayId, leaseMillis));
            RelayDatabase.update(c, sql.renewShards(), List.of(leaseMillis, relayId));
            RelayDatabase.update(c, sql.forgetRelays(), List.of(leaseMillis));
            long live = count(c);
            int fair = (int) ((shardCount + live - 1) / Math.max(1, live));
            List<Integer> held = new ArrayList<>();
            List<Integer> free = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(sql.readShards());
                    ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    if (relayId.equals(rs.getString(2))) {
                        held.add(rs.getInt(1));
                    } else if (rs.getInt(3) == 1) {
                        free.add(rs.getInt(1));
                    }
                }
            }
            while (held.size() > fair) {
                RelayDatabase.update(c, sql.releaseShard(), List.of(held.remove(held.size() - 1), relayId));
            }
            for (int shard : free) {
                if (held.size() >= fair) {
                    break;
                }
                if (RelayDatabase.update(c, sql.takeShard(), List.of(relayId, leaseMillis, shard)) == 1) {
                    held.add(shard);
                }
            }
            return held;
        });
        // From before the statements were sent: the database stamped its lease ends no earlier than this.
        owned = new Owned(List.copyOf(mine), sentNanos + lease.toNanos());
        renewAtNanos = sentNanos + lease.dividedBy(4).toNanos();
        renewed = true;
        return owned;
    }

    private long count(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.liveRelays());
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** Hands every shard back and leaves, so that the other relays take them at once. */
    void releaseAll() {
        db.run("releasing the shards", c -> {
            RelayDatabase.update(c, sql.releaseAllShards(), List.of(relayId));
            return RelayDatabase.update(c, sql.leave(), List.of(relayId));
        });
        owned = Owned.NONE;
        renewed = false;
    }
}
