package dev.idem.outbox;

import dev.idem.jdbc.Dialect;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Collections;
import java.util.Locale;

/** The relay's statements for one dialect and one outbox table ({@code <table>_shards}, {@code <table>_relays}). */
final class OutboxSql {
    static final String COLUMNS =
            "id, message_id, destination, message_key, headers, payload, created_at, attempts, refusals";

    final Dialect dialect;
    final String table;
    final String shards;
    final String relays;

    OutboxSql(Dialect dialect, String table) {
        this.dialect = dialect;
        this.table = table;
        this.shards = table + "_shards";
        this.relays = table + "_relays";
    }

    /**
     * The PostgreSQL channel {@code Outbox.send} notifies and the relay listens on: the table's name in lower case, as
     * an unquoted {@code LISTEN} folds it. Channels are per database, not per schema: two schemas' outboxes of one
     * name wake each other's relays, which then find nothing of theirs.
     */
    static String channel(String table) {
        return table.toLowerCase(Locale.ROOT);
    }

    /**
     * PostgreSQL: {@link #insert} and, when a relay waits to be woken, a notification of the table's channel
     * (parameter 8), in one statement. A notifying transaction holds a cluster-wide lock through its commit's WAL
     * flush, so notifying commits never share a flush (8 concurrent senders: 2–3× fewer commits per second); so a
     * sender notifies only when some relay holds {@link #WAITING}, and otherwise holds {@link #SENDING} shared until
     * its commit, so that a relay that starts waiting sees its message before its last look ({@link #sendersGone}).
     * The second look at {@link #WAITING}, after taking {@link #SENDING}, covers a relay that started waiting in
     * between.
     */
    static String insertNotifying(String table) {
        String waiting = waitingRelay(table);
        return "WITH inserted AS (" + insert(table) + " RETURNING 1) SELECT pg_notify(?, '') FROM inserted WHERE CASE"
                + " WHEN " + waiting + " THEN TRUE"
                + " WHEN NOT pg_try_advisory_xact_lock_shared(" + lock(SENDING, table) + ") THEN TRUE"
                + " ELSE " + waiting + " END";
    }

    /** Wakes the relays that listen on the channel (parameter 1) at the commit, whether or not one waits idle. */
    static String notifyRelays() {
        return "SELECT pg_notify(?, '')";
    }

    /**
     * The two advisory locks of the wake-up, keyed by the channel: {@link #SENDING} (senders that did not notify, until
     * their commit) and {@link #WAITING} (held shared by each idle relay's listen session). An application's own
     * advisory lock of the same two numbers only costs notifications or an idle relay's wait, never a message.
     */
    static final int SENDING = 0x1DE0_0001;

    static final int WAITING = 0x1DE0_0002;

    static String lock(int kind, String table) {
        return kind + ", " + channel(table).hashCode();
    }

    /** True when some relay holds {@link #WAITING}: a momentary exclusive try, released at once when it succeeds. */
    private static String waitingRelay(String table) {
        String waiting = lock(WAITING, table);
        return "(CASE WHEN pg_try_advisory_lock(" + waiting + ") THEN NOT pg_advisory_unlock(" + waiting + ")"
                + " ELSE TRUE END)";
    }

    /** On the listen session: this relay waits idle, senders notify. True when taken. */
    static String waitForCommits(String table) {
        return "SELECT pg_try_advisory_lock_shared(" + lock(WAITING, table) + ")";
    }

    /** On the listen session: this relay is busy, senders need not notify. True when given back. */
    static String stopWaiting(String table) {
        return "SELECT pg_advisory_unlock_shared(" + lock(WAITING, table) + ")";
    }

    /**
     * True when no sender that skipped its notification is still in its transaction (each held {@link #SENDING}
     * shared): what they sent is committed (or rolled back) and the next fetch sees it.
     */
    String sendersGone() {
        return "SELECT pg_try_advisory_xact_lock(" + lock(SENDING, table) + ")";
    }

    static String insert(String table) {
        return "INSERT INTO " + table + " (message_id, destination, message_key, key_hash, headers, payload,"
                + " created_at, retry_at, attempts, refusals) VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0, 0)";
    }

    /**
     * PostgreSQL's fetch, one statement: sorting turned off for its transaction ({@link #WALK_INDEXES}, in the same
     * round trip), then {@link #dueQuery}, so that the fetch walks the {@code (sent_at, id)} index in order and stops at
     * the limit, and the blocked keys, ordered by {@code retry_at}, come from its index. Without statistics (a new
     * table, or a burst the autovacuum has not analysed yet) the planner otherwise reads every unsent row through a
     * bitmap, tests each and sorts them, and walks every unsent row again for the blocked keys: 3.2–4.4 ms per batch at
     * 5,000 unsent in the outbox benchmark (growing with the backlog), against 0.31–0.59 ms; with statistics it mostly
     * picks the index walks itself. Read the rows with {@link #resultOfDue}.
     */
    String due(int shardCount, int owned) {
        return WALK_INDEXES + "; " + dueQuery(shardCount, owned);
    }

    /** PostgreSQL: the planner setting of {@link #due}, for its transaction. */
    static final String WALK_INDEXES = "SET LOCAL enable_sort = off";

    /**
     * The oldest publishable messages of {@code owned} shards: unsent, due, and of a key that has no message backing
     * off or parked (both have {@code retry_at} in the future, parked ones for ever), so a key's order survives a
     * failure. The blocked keys come from the small {@code retry_at} index range, not from a scan per row; a sent row
     * in it blocks nothing (an old owner that stalled past its lease marks what the broker acknowledged to it, after
     * the new owner backed that message off or parked it).
     * Parameters: now, the owned shards, now, the limit.
     */
    String dueQuery(int shardCount, int owned) {
        boolean postgres = dialect == Dialect.POSTGRESQL;
        return "SELECT " + COLUMNS + " FROM " + table + " o WHERE o.sent_at IS NULL AND o.retry_at <= ?"
                + " AND MOD(o.key_hash, " + shardCount + ") IN (" + marks(owned) + ")"
                + " AND o.message_key NOT IN (SELECT b.message_key FROM " + table + " b"
                + " WHERE b.retry_at > ? AND b.sent_at IS NULL" + (postgres ? " ORDER BY b.retry_at" : "") + ")"
                + " ORDER BY o.sent_at, o.id LIMIT ?"; // sent_at is NULL: the (sent_at, id) index's order, no sort
    }

    /**
     * The rows of {@link #due} executed on {@code ps}: its one result set, after the counts of what precedes it in the
     * statement (the {@code SET}, the {@link #marksWithTheFetch() mark}).
     */
    static ResultSet resultOfDue(PreparedStatement ps) throws SQLException {
        boolean isResultSet = ps.execute();
        while (!isResultSet) {
            if (ps.getUpdateCount() == -1) {
                throw new SQLException("the due messages' query returned no rows");
            }
            isResultSet = ps.getMoreResults();
        }
        return ps.getResultSet();
    }

    /**
     * True when {@code e} may come from PostgreSQL refusing a prepared statement of several commands, which a driver
     * that does not split statements itself (pgjdbc does) sends whole: SQLSTATE 42601, matched without the message,
     * which the server translates ({@code lc_messages}). A real syntax error fails the commands sent one by one too.
     */
    static boolean refusesSeveralCommands(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException s && "42601".equals(s.getSQLState())) {
                return true;
            }
        }
        return false;
    }

    /**
     * By primary key only: a condition on {@code sent_at} lets the planner walk the unsent rows instead (PostgreSQL
     * without statistics did, 22 ms per batch at 10,000 unsent). A row another relay already marked gets a later
     * {@code sent_at}, which only delays its purge.
     */
    String markSent(int count) {
        if (marksByArray()) {
            return "UPDATE " + table + " SET sent_at = ? WHERE id = ANY (?)";
        }
        return "UPDATE " + table + " SET sent_at = ? WHERE id IN (" + marks(count) + ")";
    }

    /**
     * PostgreSQL sends the mark of the previous batch and the fetch of the next as one statement ({@link #markSent},
     * then {@link #due}): one round trip fewer per batch.
     */
    boolean marksWithTheFetch() {
        return dialect == Dialect.POSTGRESQL;
    }

    /**
     * PostgreSQL marks a batch with one array parameter ({@code = ANY (?)}): with a list of a hundred parameters the
     * mark took 5.7–6.8 ms per batch of 100 in the outbox benchmark, with the array 1.7–2.7 ms (as the hand-written
     * relay's).
     */
    boolean marksByArray() {
        return dialect == Dialect.POSTGRESQL;
    }

    /** Parameters: attempts, refusals, retry_at, last_error, id. */
    String backOff() {
        return "UPDATE " + table + " SET attempts = ?, refusals = ?, retry_at = ?, last_error = ?"
                + " WHERE id = ? AND sent_at IS NULL";
    }

    /** {@code retry_at} of a parked message: never due, and it blocks its key (see {@link #due}). */
    static final long PARKED = Long.MAX_VALUE;

    /** Parameters: attempts, refusals, parked_at, last_error, id. */
    String park() {
        return "UPDATE " + table + " SET attempts = ?, refusals = ?, parked_at = ?, last_error = ?, retry_at = "
                + PARKED + " WHERE id = ? AND sent_at IS NULL";
    }

    String unpark() {
        return "UPDATE " + table + " SET parked_at = NULL, refusals = 0, retry_at = 0"
                + " WHERE message_id = ? AND parked_at IS NOT NULL AND sent_at IS NULL";
    }

    String parked() {
        return "SELECT message_id, destination, message_key, parked_at, refusals, last_error FROM " + table
                + " WHERE parked_at IS NOT NULL AND sent_at IS NULL ORDER BY id LIMIT ?";
    }

    /** Unsent count, oldest unsent not parked (created_at), parked count. */
    String stats() {
        return "SELECT COUNT(*), MIN(CASE WHEN parked_at IS NULL THEN created_at END),"
                + " SUM(CASE WHEN parked_at IS NULL THEN 0 ELSE 1 END) FROM " + table + " WHERE sent_at IS NULL";
    }

    /** Sent before the parameter, at most the second parameter's rows. An unsent message (sent_at NULL) never matches. */
    String purge() {
        if (dialect == Dialect.MARIADB || dialect == Dialect.MYSQL) {
            return "DELETE FROM " + table + " WHERE sent_at < ? ORDER BY sent_at LIMIT ?";
        }
        return "DELETE FROM " + table + " WHERE id IN (SELECT id FROM " + table
                + " WHERE sent_at < ? ORDER BY sent_at LIMIT ?)";
    }

    /** Parameters: shard (twice on H2). */
    String addShard() {
        return switch (dialect) {
            case POSTGRESQL ->
                "INSERT INTO " + shards + " (shard, owner, expires_at, takeovers) VALUES (?, NULL, 0, 0)"
                        + " ON CONFLICT (shard) DO NOTHING";
            case MARIADB, MYSQL ->
                "INSERT IGNORE INTO " + shards + " (shard, owner, expires_at, takeovers) VALUES (?, NULL, 0, 0)";
            case H2 ->
                "INSERT INTO " + shards + " (shard, owner, expires_at, takeovers) SELECT ?, NULL, 0, 0"
                        + " WHERE NOT EXISTS (SELECT 1 FROM " + shards + " WHERE shard = ?)";
        };
    }

    String countShards() {
        return "SELECT COUNT(*) FROM " + shards;
    }

    /**
     * Each shard, its owner, and 1 when it is free to take (no owner, or its lease ended by the database's clock).
     */
    String readShards() {
        return "SELECT shard, owner, CASE WHEN owner IS NULL OR expires_at <= " + now() + " THEN 1 ELSE 0 END FROM "
                + shards + " ORDER BY shard";
    }

    /** Parameters: lease (ms), owner. */
    String renewShards() {
        return "UPDATE " + shards + " SET expires_at = " + now() + " + ? WHERE owner = ?";
    }

    /** Parameters: owner, lease (ms), shard. */
    String takeShard() {
        return "UPDATE " + shards + " SET owner = ?, expires_at = " + now() + " + ?, takeovers = takeovers + 1"
                + " WHERE shard = ? AND (owner IS NULL OR expires_at <= " + now() + ")";
    }

    /** Parameters: shard, owner. */
    String releaseShard() {
        return "UPDATE " + shards + " SET owner = NULL, expires_at = 0 WHERE shard = ? AND owner = ?";
    }

    /** Parameters: owner. */
    String releaseAllShards() {
        return "UPDATE " + shards + " SET owner = NULL, expires_at = 0 WHERE owner = ?";
    }

    /** Parameters: relay id, lease (ms). */
    String heartbeat() {
        String columns = relays + " (relay_id, expires_at)";
        String values = " VALUES (?, " + now() + " + ?)";
        return switch (dialect) {
            case POSTGRESQL ->
                "INSERT INTO " + columns + values
                        + " ON CONFLICT (relay_id) DO UPDATE SET expires_at = EXCLUDED.expires_at";
            case MARIADB, MYSQL ->
                "INSERT INTO " + columns + values + " ON DUPLICATE KEY UPDATE expires_at = VALUES(expires_at)";
            case H2 -> "MERGE INTO " + columns + " KEY (relay_id)" + values;
        };
    }

    String liveRelays() {
        return "SELECT COUNT(*) FROM " + relays + " WHERE expires_at > " + now();
    }

    /** Relays whose heartbeat ended longer than the parameter (ms) ago. */
    String forgetRelays() {
        return "DELETE FROM " + relays + " WHERE expires_at < " + now() + " - ?";
    }

    /** Parameters: relay id. */
    String leave() {
        return "DELETE FROM " + relays + " WHERE relay_id = ?";
    }

    /**
     * The database's clock: every lease end is stamped and compared on it, so that relays whose clocks disagree still
     * agree on who owns a shard.
     */
    private String now() {
        return dialect.nowMillis();
    }

    private static String marks(int count) {
        return String.join(", ", Collections.nCopies(count, "?"));
    }
}
