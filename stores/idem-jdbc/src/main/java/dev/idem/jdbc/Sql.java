package dev.idem.jdbc;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Every statement both modes run, for one dialect and one table. The table name was validated against {@link
 * Schema#TABLE_NAME}; every value goes through a bind parameter. Thread-safe (no state beyond final strings).
 */
final class Sql {
    static final String PROCESSING = "PROCESSING";
    static final String DONE = "DONE";
    /** The row of an id while the given owner's claim on it runs. */
    private static final String PROCESSING_OF_OWNER = "id = ? AND state = '" + PROCESSING + "' AND owner_token = ?";

    /** How long a claim waits for a key's row another transaction holds (and MariaDB's own lock wait). */
    static final int CLAIM_LOCK_WAIT_SECONDS = 10;
    /** How long a PostgreSQL batch claim waits for an id another transaction is inserting or changing. */
    static final Duration BATCH_LOCK_WAIT = Duration.ofMillis(100);

    static final int RELEASE_LOCK_WAIT_SECONDS = 5;

    /** How long a PostgreSQL lease extension waits for a row another transaction holds. */
    static final Duration EXTEND_LOCK_WAIT = Duration.ofMillis(100);

    /** Rows per multi-row statement: keeps bind parameters far below every driver's limit. */
    private static final int CHUNK = 500;

    private static final String COLUMNS =
            "id, state, owner_token, fencing_token, expires_at, completed_at, fingerprint, result_data";
    private static final String READ_COLUMNS =
            "state, owner_token, fencing_token, expires_at, completed_at, fingerprint, result_data";
    /** {@code owner_token}'s position in a result of {@code id, READ_COLUMNS}. */
    private static final int OWNER_COLUMN = 3;
    /*
     * PostgreSQL: the names the batch statements give their own rows hold a blank, which no table name may
     * (Schema#TABLE_NAME): a table of any allowed name is neither hidden by them nor hides them.
     */
    private static final String IDS = "\"idem ids\"";
    private static final String GIVEN = "\"idem given\"";
    private static final String INSERTED = "\"idem inserted\"";
    /**
     * PostgreSQL: the rows a mark insert returns, shaped as {@code id, READ_COLUMNS} with only the owner set (which
     * tells them from the taken marks read beside them): the rest is known, and sending and decoding it cost.
     */
    private static final String INSERTED_ROWS =
            "SELECT id, NULL, owner_token, NULL, NULL, NULL, NULL, NULL FROM " + INSERTED;

    private static final String CLOCK = "\"idem clock\"";
    private static final String BEFORE = "\"idem before\"";
    private static final String CLAIMED = "\"idem claimed\"";
    private static final String MARK = "\"idem mark\"";

    /** Orders ids as the databases do (UTF-8 bytes, binary collation), so that locks are taken in one order. */
    static final Comparator<String> ID_ORDER =
            (a, b) -> Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));

    final Dialect dialect;
    final String table;
    private final String sequence;
    private final String selectRow;
    private final String conflictFreeInsertPrefix;
    private final String conflictFreeInsertSuffix;
    private final String upsertClaimOnGivenClock;
    private final String upsertClaimOnDatabaseClock;
    private final String completeOnGivenClock;
    private final String completeOnDatabaseClock;
    private final String extendOnGivenClock;
    private final String extendOnDatabaseClock;
    private final String releaseRow;
    private final String insertMarksFromArrays;
    private final Map<Lock, String> selectOneById;
    /** The inserts of marks by row count, built once each as every text above (H2 inserts one at a time, see insertH2). */
    private final StatementTexts<Integer, String> insertMarksByRows = new StatementTexts<>(64, this::insertMarks);

    Sql(Dialect dialect, String table) {
        this.dialect = dialect;
        this.table = table;
        this.sequence = table + "_fencing";
        this.selectRow = "SELECT " + READ_COLUMNS + " FROM " + table + " WHERE id = ?";
        this.conflictFreeInsertPrefix = switch (dialect) {
            case MARIADB, MYSQL -> "INSERT IGNORE INTO ";
            case POSTGRESQL, H2 -> "INSERT INTO ";
        };
        this.conflictFreeInsertSuffix = dialect == Dialect.POSTGRESQL ? " ON CONFLICT DO NOTHING" : "";
        this.upsertClaimOnGivenClock = upsertClaim("CAST(? AS BIGINT)");
        this.upsertClaimOnDatabaseClock = upsertClaim(nowExpression());
        String given = mysqlFamily() ? "CAST(? AS SIGNED)" : "CAST(? AS BIGINT)";
        this.completeOnGivenClock = complete(given);
        this.completeOnDatabaseClock = complete(nowExpression());
        this.extendOnGivenClock = extend(given);
        this.extendOnDatabaseClock = extend(nowExpression());
        this.releaseRow = "DELETE FROM " + table + " WHERE " + PROCESSING_OF_OWNER;
        this.insertMarksFromArrays = insertMarksFromArrays();
        this.selectOneById = new EnumMap<>(Lock.class);
        for (Lock lock : Lock.values()) {
            selectOneById.put(
                    lock, "SELECT id, " + READ_COLUMNS + " FROM " + table + " WHERE id = ?" + lockClause(lock));
        }
    }

    boolean mysqlFamily() {
        return dialect == Dialect.MARIADB || dialect == Dialect.MYSQL;
    }

    // ---------------------------------------------------------------- clock

    long databaseNowMillis(Connection c) throws SQLException {
        return databaseNowMillis(dialect, c);
    }

    /** The database's clock in epoch milliseconds, read in UTC whatever the session's time zone. */
    static long databaseNowMillis(Dialect dialect, Connection c) throws SQLException {
        String query = "SELECT " + dialect.nowMillis();
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(query)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    // ---------------------------------------------------------------- reads

    @Nullable
    Row select(Connection c, String id, Lock lock) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(selectRow + lockClause(lock));
                LockWait bound = lock == Lock.EXCLUSIVE
                        ? LockWait.bound(dialect, ps, CLAIM_LOCK_WAIT_SECONDS)
                        : LockWait.UNWATCHED) {
            ps.setString(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? read(rs, 1) : null;
            }
        }
    }

    /** The rows of {@code sortedIds} that exist, read (and locked, with {@code lock}) in id order. */
    Map<String, Row> selectMany(Connection c, List<String> sortedIds, Lock lock) throws SQLException {
        Map<String, Row> rows = new HashMap<>();
        for (List<String> chunk : chunks(sortedIds)) {
            // PostgreSQL: one text whatever the size, the ids as one array parameter, one probe per id in the
            // array's (sorted) order, which is the order the rows are locked in.
            boolean array = dialect == Dialect.POSTGRESQL && chunk.size() > 1;
            String sql = chunk.size() == 1
                    ? selectOneById.get(lock)
                    : array
                            ? "SELECT t.* FROM unnest(CAST(? AS varchar[])) AS " + IDS + "(id) CROSS JOIN LATERAL "
                                    + probe(IDS + ".id", lockClause(lock)) + " t"
                            : "SELECT id, " + READ_COLUMNS + " FROM " + table + " WHERE id IN (" + marks(chunk.size())
                                    + ") ORDER BY id" + lockClause(lock);
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                if (array) {
                    ps.setArray(1, c.createArrayOf("varchar", chunk.toArray(new String[0])));
                } else {
                    for (int i = 0; i < chunk.size(); i++) {
                        ps.setString(i + 1, chunk.get(i));
                    }
                }
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        rows.put(readId(rs), read(rs, 2));
                    }
                }
            }
        }
        return rows;
    }

    /** How a read locks the rows it finds. */
    enum Lock {
        NONE,
        /** Sees the latest committed row whatever the isolation level (MySQL's snapshot reads do not). */
        SHARED,
        EXCLUSIVE,
        /**
         * {@link #EXCLUSIVE}, failing at once on a row another transaction holds (PostgreSQL, MariaDB; H2 waits): a
         * batch that waited for one held row would keep its other rows locked meanwhile.
         */
        EXCLUSIVE_NOWAIT
    }

    private String lockClause(Lock lock) {
        return switch (lock) {
            case NONE -> "";
            case EXCLUSIVE -> " FOR UPDATE";
            case EXCLUSIVE_NOWAIT -> dialect == Dialect.H2 ? " FOR UPDATE" : " FOR UPDATE NOWAIT";
            case SHARED -> mysqlFamily() ? " LOCK IN SHARE MODE" : "";
        };
    }

    private String readId(ResultSet rs) throws SQLException {
        // MySQL keeps ids as VARBINARY (binary comparison, no pad-space collation): decode the UTF-8 bytes.
        return mysqlFamily() ? new String(rs.getBytes(1), StandardCharsets.UTF_8) : rs.getString(1);
    }

    private static Row read(ResultSet rs, int first) throws SQLException {
        String state = rs.getString(first);
        String owner = rs.getString(first + 1);
        long token = rs.getLong(first + 2);
        long expiresAt = rs.getLong(first + 3);
        long completedAt = rs.getLong(first + 4);
        Long completed = rs.wasNull() ? null : completedAt;
        String fingerprint = rs.getString(first + 5);
        byte[] result = rs.getBytes(first + 6);
        return new Row(state, owner, token, expiresAt, completed, fingerprint, result);
    }

    // ---------------------------------------------------------------- lease mode

    /** A fresh fencing token from the table's sequence (global, so monotonic in every namespace). */
    long nextToken(Connection c) throws SQLException {
        String query = switch (dialect) {
            case POSTGRESQL -> "SELECT nextval('" + sequence + "')";
            case MARIADB -> "SELECT NEXTVAL(" + sequence + ")";
            case H2 -> "SELECT NEXT VALUE FOR " + sequence;
            case MYSQL -> throw new IllegalStateException("lease mode is refused on MySQL at build time");
        };
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(query)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /**
     * The database clock as an SQL expression in epoch milliseconds (UTC), for statements that read it inline
     * instead of in a round trip of their own.
     */
    String nowExpression() {
        return dialect.nowMillis();
    }

    /**
     * What PostgreSQL's one-statement claim saw and did: the clock it used, the claim it made ({@code token} and
     * {@code leaseUntil}, null when the key is held by someone else), whether it inserted the row, and the row as it
     * was before the claim, read under the claim's lock ({@code before}; null when there was none, or when another
     * transaction inserted it while this statement ran).
     */
    record UpsertedClaim(
            long now,
            @Nullable Long token,
            long leaseUntil,
            boolean inserted,
            @Nullable Row before) {}

    /**
     * PostgreSQL's claim in one statement (one round trip in auto-commit): inserts the key, or takes its row over
     * when its lease or retention has ended or it is the caller's own claim, in one atomic upsert; and reads the row
     * as it was, which says why nothing was taken, or whose lease was. {@code now} is null for the database's clock.
     * Under repeatable read a row changed since the statement's snapshot is a serialization failure (SQLState
     * 40001): nothing was changed, and the caller runs the statement again.
     */
    UpsertedClaim upsertClaim(
            Connection c, String id, String owner, @Nullable Long now, long leaseMillis, @Nullable String fingerprint)
            throws SQLException {
        try (PreparedStatement ps =
                        c.prepareStatement(now == null ? upsertClaimOnDatabaseClock : upsertClaimOnGivenClock);
                LockWait bound = LockWait.bound(dialect, ps, CLAIM_LOCK_WAIT_SECONDS)) {
            int p = 1;
            if (now != null) {
                ps.setLong(p++, now);
            }
            ps.setString(p++, id);
            ps.setString(p++, id);
            ps.setString(p++, owner);
            ps.setLong(p++, leaseMillis);
            setNullableString(ps, p, fingerprint);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                long clock = rs.getLong(1);
                long token = rs.getLong(2);
                Long claimed = rs.wasNull() ? null : token;
                long leaseUntil = rs.getLong(3);
                boolean inserted = rs.getBoolean(4);
                Row before = rs.getString(5) == null ? null : read(rs, 5);
                return new UpsertedClaim(clock, claimed, leaseUntil, inserted, before);
            }
        }
    }

    private String upsertClaim(String clock) {
        // `before` locks the row and reads its latest version (read committed follows a concurrent update), and the
        // insert reads `before` first, so the row it then rewrites is the one `before` shows. A takeover draws its
        // token once it holds the row, so the token is greater than that of every claim the row had.
        return "WITH " + CLOCK + " AS (SELECT " + clock + " AS now),"
                + " " + BEFORE + " AS (SELECT " + READ_COLUMNS + " FROM " + table + " WHERE id = ? FOR UPDATE),"
                + " " + CLAIMED + " AS (INSERT INTO " + table + " AS cur (" + COLUMNS + ")"
                + " SELECT ?, '" + PROCESSING + "', ?, nextval('" + sequence + "'), " + CLOCK
                + ".now + ?, NULL, ?, NULL"
                + " FROM " + CLOCK + " LEFT JOIN " + BEFORE + " ON TRUE"
                + " ON CONFLICT (id) DO UPDATE SET state = '" + PROCESSING + "', owner_token = EXCLUDED.owner_token,"
                + " fencing_token = CASE WHEN cur.state = '" + PROCESSING + "' AND cur.owner_token ="
                + " EXCLUDED.owner_token THEN cur.fencing_token ELSE nextval('" + sequence + "') END,"
                + " expires_at = EXCLUDED.expires_at, completed_at = NULL, fingerprint = EXCLUDED.fingerprint,"
                + " result_data = NULL"
                + " WHERE cur.expires_at <= (SELECT now FROM " + CLOCK + ")"
                + " OR (cur.state = '" + PROCESSING + "' AND cur.owner_token = EXCLUDED.owner_token)"
                + " RETURNING cur.fencing_token, cur.expires_at, (cur.xmax = 0) AS inserted)"
                + " SELECT " + CLOCK + ".now, " + CLAIMED + ".fencing_token, " + CLAIMED + ".expires_at, " + CLAIMED
                + ".inserted,"
                + " " + BEFORE + ".*"
                + " FROM " + CLOCK + " LEFT JOIN " + CLAIMED + " ON TRUE LEFT JOIN " + BEFORE + " ON TRUE";
    }

    /** A new claim to insert. */
    record NewClaim(
            String id,
            String owner,
            long leaseUntil,
            @Nullable String fingerprint) {}

    /**
     * Inserts the claims whose id is free, in the given (sorted) order, each with a fresh fencing token; a taken id
     * is skipped without error. Returns the tokens of the inserted ids.
     */
    Map<String, Long> insertClaims(Connection c, List<NewClaim> claims) throws SQLException {
        return insertClaims(c, claims, true);
    }

    /**
     * {@link #insertClaims(Connection, List)}; without {@code waitForHeldIds}, an id another transaction is inserting
     * (or changing) fails the insert at once on MariaDB and within {@link #BATCH_LOCK_WAIT} on PostgreSQL, for the
     * rest of the caller's transaction, instead of waiting up to {@link #CLAIM_LOCK_WAIT_SECONDS}: a batch waits so
     * while holding the rows it has locked, whose owners' lease renewals then fail.
     */
    Map<String, Long> insertClaims(Connection c, List<NewClaim> claims, boolean waitForHeldIds) throws SQLException {
        Map<String, Long> tokens = new HashMap<>();
        if (dialect == Dialect.H2) {
            for (NewClaim claim : claims) {
                long token = nextToken(c);
                if (insertH2(
                        c,
                        claim.id(),
                        PROCESSING,
                        claim.owner(),
                        token,
                        claim.leaseUntil(),
                        null,
                        claim.fingerprint(),
                        0)) {
                    tokens.put(claim.id(), token);
                }
            }
            return tokens;
        }
        String tokenExpression =
                dialect == Dialect.POSTGRESQL ? "nextval('" + sequence + "')" : "NEXTVAL(" + sequence + ")";
        String noWait = "";
        if (!waitForHeldIds && dialect == Dialect.POSTGRESQL && !claims.isEmpty()) {
            try (Statement st = c.createStatement()) {
                st.execute("SET LOCAL lock_timeout = '" + BATCH_LOCK_WAIT.toMillis() + "ms'");
            }
        } else if (!waitForHeldIds && dialect == Dialect.MARIADB) {
            noWait = "SET STATEMENT innodb_lock_wait_timeout = 0 FOR ";
        }
        for (List<NewClaim> chunk : chunks(claims)) {
            String sql = noWait + conflictFreeInsertPrefix + table + " (" + COLUMNS + ") VALUES "
                    + String.join(
                            ", ",
                            Collections.nCopies(
                                    chunk.size(),
                                    "(?, '" + PROCESSING + "', ?, " + tokenExpression + ", ?, NULL, ?, NULL)"))
                    + conflictFreeInsertSuffix + " RETURNING id, fencing_token";
            try (PreparedStatement ps = c.prepareStatement(sql);
                    LockWait bound = LockWait.bound(dialect, ps, CLAIM_LOCK_WAIT_SECONDS)) {
                int p = 1;
                for (NewClaim claim : chunk) {
                    ps.setString(p++, claim.id());
                    ps.setString(p++, claim.owner());
                    ps.setLong(p++, claim.leaseUntil());
                    setNullableString(ps, p++, claim.fingerprint());
                }
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        tokens.put(readId(rs), rs.getLong(2));
                    }
                }
            }
        }
        return tokens;
    }

    /** Rewrites a row the caller holds locked as a fresh claim. */
    record Reclaim(
            String id,
            String owner,
            long token,
            long leaseUntil,
            @Nullable String fingerprint) {}

    void reclaim(Connection c, List<Reclaim> reclaims) throws SQLException {
        if (reclaims.isEmpty()) {
            return;
        }
        String sql = "UPDATE " + table + " SET state = '" + PROCESSING + "', owner_token = ?, fencing_token = ?,"
                + " expires_at = ?, completed_at = NULL, fingerprint = ?, result_data = NULL WHERE id = ?";
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (Reclaim r : reclaims) {
                ps.setString(1, r.owner());
                ps.setLong(2, r.token());
                ps.setLong(3, r.leaseUntil());
                setNullableString(ps, 4, r.fingerprint());
                ps.setString(5, r.id());
                if (reclaims.size() == 1) {
                    ps.executeUpdate();
                } else {
                    ps.addBatch();
                }
            }
            if (reclaims.size() > 1) {
                ps.executeBatch();
            }
        }
    }

    /**
     * Completes the owner's claim: kept for {@code retentionMillis} from {@code now}, or from the database's clock
     * when {@code now} is null (read in the same statement).
     */
    int complete(
            Connection c, String id, String owner, @Nullable Long now, long retentionMillis, byte @Nullable [] result)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(now == null ? completeOnDatabaseClock : completeOnGivenClock)) {
            int p = 1;
            if (now != null) {
                ps.setLong(p++, now);
            }
            ps.setLong(p++, retentionMillis);
            if (now != null) {
                ps.setLong(p++, now);
            }
            setNullableBytes(ps, p++, result);
            ps.setString(p++, id);
            ps.setString(p, owner);
            return ps.executeUpdate();
        }
    }

    private String complete(String clock) {
        return "UPDATE " + table + " SET state = '" + DONE + "', expires_at = " + clock + " + ?, completed_at = "
                + clock + ", result_data = ? WHERE " + PROCESSING_OF_OWNER;
    }

    /**
     * Deletes the owner's claim, waiting at most {@link #RELEASE_LOCK_WAIT_SECONDS} for the row's lock: a claim of a
     * copy holds it for a moment, a handler's transaction holding its completion until it commits, and one whose
     * commit never came back until the server notices the dead session.
     */
    int release(Connection c, String id, String owner) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(releaseRow);
                LockWait bound = LockWait.bound(dialect, ps, RELEASE_LOCK_WAIT_SECONDS)) {
            ps.setString(1, id);
            ps.setString(2, owner);
            return ps.executeUpdate();
        }
    }

    /**
     * Extends the owner's claim to {@code leaseMillis} from {@code now}, or from the database's clock when null,
     * without waiting long for a row another transaction holds: the lease watchdog (one thread for the JVM, retrying at
     * its next sweep) must not hang on a row locked by a completion written in a handler's transaction, for ever if its
     * commit never came back (a connection lost mid-commit keeps the server's session, and its lock, until the server
     * notices). PostgreSQL waits in the row's lock queue for at most {@link #EXTEND_LOCK_WAIT}: a copy's claim holds
     * the row for a moment, and the queue serves the extension before the copies' next claims (tried without waiting
     * and again, it lost to sixty copies polling a hot key). MariaDB's lock wait is zero for the statement (the store
     * tries again after a pause); H2 (in the JVM) waits for its lock timeout.
     */
    int extend(Connection c, String id, String owner, @Nullable Long now, long leaseMillis) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(now == null ? extendOnDatabaseClock : extendOnGivenClock);
                LockWait bound = dialect == Dialect.POSTGRESQL
                        ? LockWait.bound(dialect, ps, EXTEND_LOCK_WAIT)
                        : LockWait.UNWATCHED) {
            int p = 1;
            if (now != null) {
                ps.setLong(p++, now);
            }
            ps.setLong(p++, leaseMillis);
            ps.setString(p++, id);
            ps.setString(p, owner);
            return ps.executeUpdate();
        }
    }

    /** True when {@link #extend} waits for a held row itself, false when it fails at once and is worth another try. */
    boolean extendWaitsForTheRow() {
        return dialect == Dialect.POSTGRESQL || dialect == Dialect.H2;
    }

    private String extend(String clock) {
        String change = "UPDATE " + table + " SET expires_at = " + clock + " + ?";
        return dialect == Dialect.MARIADB
                ? "SET STATEMENT innodb_lock_wait_timeout = 0 FOR " + change + " WHERE " + PROCESSING_OF_OWNER
                : change + " WHERE " + PROCESSING_OF_OWNER;
    }

    // ---------------------------------------------------------------- transactional mode

    /** What {@link #insertMarks} did: the ids it inserted, and the rows it found in place of the others. */
    record Marks(Set<String> inserted, Map<String, Row> found) {}

    /**
     * Inserts DONE marks for the ids that are free, in the given (sorted) order, all owned by {@code owner}; a
     * taken id is skipped without error, and an uncommitted mark of another transaction makes this wait for it.
     * Never raises a unique violation on PostgreSQL or MySQL. On PostgreSQL and MariaDB the same statement answers
     * the rows of the taken ids (no second round trip for a duplicate); a taken id missing from {@link
     * Marks#found()} (always on MySQL and H2; on PostgreSQL a mark committed after the statement's snapshot) must be
     * read.
     */
    Marks insertMarks(
            Connection c,
            List<String> sortedIds,
            Map<String, @Nullable String> fingerprints,
            String owner,
            long now,
            long expiresAt,
            int lockWaitSeconds)
            throws SQLException {
        Set<String> inserted = new HashSet<>();
        Map<String, Row> found = new HashMap<>();
        if (dialect == Dialect.H2) {
            for (String id : sortedIds) {
                if (insertH2(c, id, DONE, owner, 0, expiresAt, now, fingerprints.get(id), lockWaitSeconds)) {
                    inserted.add(id);
                }
            }
            return new Marks(inserted, found);
        }
        for (List<String> chunk : chunks(sortedIds)) {
            if (dialect == Dialect.POSTGRESQL && chunk.size() > 1) {
                insertMarksFromArrays(c, chunk, fingerprints, owner, now, expiresAt, lockWaitSeconds, inserted, found);
                continue;
            }
            String sql = insertMarksByRows.of(chunk.size());
            try (PreparedStatement ps = c.prepareStatement(sql);
                    LockWait bound = LockWait.bound(dialect, ps, lockWaitSeconds)) {
                int p = 1;
                for (String id : chunk) {
                    ps.setString(p++, id);
                    ps.setString(p++, owner);
                    ps.setLong(p++, expiresAt);
                    ps.setLong(p++, now);
                    setNullableString(ps, p++, fingerprints.get(id));
                }
                if (dialect == Dialect.MYSQL) {
                    int count = ps.executeUpdate();
                    if (count == chunk.size()) {
                        inserted.addAll(chunk);
                    } else if (count > 0) {
                        inserted.addAll(idsOwnedBy(c, chunk, owner));
                    }
                    continue;
                }
                if (dialect == Dialect.POSTGRESQL) {
                    for (String id : chunk) {
                        ps.setString(p++, id);
                    }
                }
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        String id = readId(rs);
                        if (owner.equals(rs.getString(OWNER_COLUMN))) {
                            inserted.add(id); // owner tokens are fresh per attempt: only this insert wrote it
                        } else {
                            found.put(id, read(rs, 2));
                        }
                    }
                }
            }
        }
        return new Marks(inserted, found);
    }

    /**
     * PostgreSQL's batch of marks as one statement whose text does not depend on the batch's size: the ids and
     * fingerprints travel as two array parameters, so the server plans it once per connection, and the taken ids
     * are read one primary-key probe each (see {@link #probe}) instead of through an {@code IN} list of one parameter
     * per id, whose text changes with every size and whose plan on a small or fresh table scans the whole table.
     * Inserts in the arrays' (sorted) order. Same answers as the one-row statement of {@link #insertMarks}.
     */
    private void insertMarksFromArrays(
            Connection c,
            List<String> sortedIds,
            Map<String, @Nullable String> fingerprints,
            String owner,
            long now,
            long expiresAt,
            int lockWaitSeconds,
            Set<String> inserted,
            Map<String, Row> found)
            throws SQLException {
        String[] ids = sortedIds.toArray(new String[0]);
        String[] prints = new String[ids.length];
        for (int i = 0; i < ids.length; i++) {
            prints[i] = fingerprints.get(ids[i]);
        }
        try (PreparedStatement ps = c.prepareStatement(insertMarksFromArrays);
                LockWait bound = LockWait.bound(dialect, ps, lockWaitSeconds)) {
            ps.setArray(1, c.createArrayOf("varchar", ids));
            ps.setArray(2, c.createArrayOf("varchar", prints));
            ps.setString(3, owner);
            ps.setLong(4, expiresAt);
            ps.setLong(5, now);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String id = rs.getString(1);
                    if (owner.equals(rs.getString(OWNER_COLUMN))) {
                        inserted.add(id);
                    } else {
                        found.put(id, read(rs, 2));
                    }
                }
            }
        }
    }

    /**
     * The marks of {@code rows} ids in one statement, answering each id's row: inserted (carrying this attempt's owner
     * token) or found. PostgreSQL runs it for one id only (more go through {@link #insertMarksFromArrays()}), and reads
     * the taken row only when the insert took nothing.
     */
    private String insertMarks(int rows) {
        String values = String.join(", ", Collections.nCopies(rows, "(?, '" + DONE + "', ?, 0, ?, ?, ?, NULL)"));
        return switch (dialect) {
            // The CTE's insert and select share one snapshot: the select sees the marks that were there, not those
            // the insert added (read from its RETURNING) nor one a concurrent copy committed meanwhile.
            case POSTGRESQL -> {
                if (rows != 1) {
                    throw new IllegalStateException("PostgreSQL inserts more marks from arrays");
                }
                yield "WITH " + INSERTED + " AS (INSERT INTO " + table + " (" + COLUMNS + ") VALUES " + values
                        + " ON CONFLICT DO NOTHING RETURNING id, owner_token) " + INSERTED_ROWS
                        + " UNION ALL SELECT id, " + READ_COLUMNS + " FROM " + table
                        + " WHERE id = ? AND NOT EXISTS (SELECT 1 FROM " + INSERTED + ")";
            }
            // A no-op update of a taken id makes RETURNING answer its row as it is (locked, latest committed).
            case MARIADB ->
                "INSERT INTO " + table + " (" + COLUMNS + ") VALUES " + values + " ON DUPLICATE KEY UPDATE id = id"
                        + " RETURNING id, " + READ_COLUMNS;
            case MYSQL -> "INSERT IGNORE INTO " + table + " (" + COLUMNS + ") VALUES " + values;
            case H2 -> throw new IllegalStateException("H2 inserts one mark at a time");
        };
    }

    private String insertMarksFromArrays() {
        // As the one-row statement: the CTE's insert and select share one snapshot, so the select sees the marks that
        // were there, not those the insert added (read from its RETURNING); only the ids the insert did not take are
        // looked up (an inserted id's probe would find nothing at that snapshot, at the cost of an index scan).
        return "WITH " + GIVEN + " AS (SELECT * FROM unnest(CAST(? AS varchar[]), CAST(? AS varchar[])) WITH ORDINALITY"
                + " AS g(id, fingerprint, n)),"
                + " " + INSERTED + " AS (INSERT INTO " + table + " (" + COLUMNS + ") SELECT id, '" + DONE
                + "', ?, 0, ?, ?, fingerprint, NULL FROM " + GIVEN + " ORDER BY n ON CONFLICT DO NOTHING"
                + " RETURNING id, owner_token) " + INSERTED_ROWS + " UNION ALL SELECT t.* FROM " + GIVEN
                + " CROSS JOIN LATERAL " + probe(GIVEN + ".id", "") + " t WHERE NOT EXISTS (SELECT 1 FROM " + INSERTED
                + " AS i WHERE i.id = " + GIVEN + ".id)";
    }

    /**
     * The row of one id as a subquery of its own ({@code OFFSET 0} keeps the planner from merging it into a join):
     * each id of an array is looked up through the primary key, whatever the planner believes of the table's size
     * (a fresh, never analyzed table that grows in a run would otherwise be scanned whole for every batch).
     */
    private String probe(String idExpression, String lock) {
        return "(SELECT id, " + READ_COLUMNS + " FROM " + table + " AS " + MARK + " WHERE " + MARK + ".id = "
                + idExpression + " OFFSET 0" + lock + ")";
    }

    /** How many of {@code ids} carry {@code owner}'s token, as this transaction sees them. */
    int countOwned(Connection c, List<String> ids, String owner) throws SQLException {
        int count = 0;
        for (List<String> chunk : chunks(ids)) {
            count += idsOwnedBy(c, chunk, owner).size();
        }
        return count;
    }

    /** MySQL has no RETURNING: the rows of a batch that carry this batch's owner token are the inserted ones. */
    private List<String> idsOwnedBy(Connection c, List<String> ids, String owner) throws SQLException {
        String sql = "SELECT id FROM " + table + " WHERE owner_token = ? AND id IN (" + marks(ids.size()) + ")";
        List<String> owned = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, owner);
            for (int i = 0; i < ids.size(); i++) {
                ps.setString(i + 2, ids.get(i));
            }
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    owned.add(readId(rs));
                }
            }
        }
        return owned;
    }

    /** Replaces an expired row (of any state) with this transaction's DONE mark. True when it did. */
    boolean replaceExpired(
            Connection c,
            String id,
            String owner,
            long now,
            long expiresAt,
            @Nullable String fingerprint,
            int lockWaitSeconds)
            throws SQLException {
        String sql = "UPDATE " + table + " SET state = '" + DONE + "', owner_token = ?, fencing_token = 0,"
                + " expires_at = ?, completed_at = ?, fingerprint = ?, result_data = NULL WHERE id = ? AND expires_at <= ?";
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, owner);
            ps.setLong(2, expiresAt);
            ps.setLong(3, now);
            setNullableString(ps, 4, fingerprint);
            ps.setString(5, id);
            ps.setLong(6, now);
            try (LockWait bound = LockWait.bound(dialect, ps, lockWaitSeconds)) {
                return ps.executeUpdate() == 1;
            }
        }
    }

    void storeResult(Connection c, String id, String owner, byte[] result) throws SQLException {
        try (PreparedStatement ps =
                c.prepareStatement("UPDATE " + table + " SET result_data = ? WHERE id = ? AND owner_token = ?")) {
            ps.setBytes(1, result);
            ps.setString(2, id);
            ps.setString(3, owner);
            ps.executeUpdate();
        }
    }

    /**
     * Fails (PostgreSQL SQLState 25P02) when the transaction is aborted. With pgjdbc the driver's own transaction
     * state answers without a round trip; with another driver, the cheapest statement does.
     */
    void probe(Connection c) throws SQLException {
        Optional<Boolean> aborted = PgTransactionState.isAborted(c);
        if (aborted.isEmpty()) {
            try (Statement s = c.createStatement()) {
                s.execute("SELECT 1");
            }
        } else if (aborted.get()) {
            throw new SQLException("current transaction is aborted (driver's transaction state)", "25P02");
        }
    }

    // ---------------------------------------------------------------- purge

    /**
     * Deletes up to {@code limit} rows: completions whose retention ended at or before {@code now}, and claims whose
     * lease ended at or before {@code lapsedBefore} (their consumer crashed and no redelivery took them over; fencing
     * tokens still grow, they come from the sequence).
     */
    int purgeBatch(Connection c, long now, long lapsedBefore, int limit) throws SQLException {
        String expired = "expires_at <= ? AND (state = '" + DONE + "' OR expires_at <= ?)";
        String sql = switch (dialect) {
            case POSTGRESQL ->
                "DELETE FROM " + table + " WHERE id IN (SELECT id FROM " + table + " WHERE " + expired
                        + " ORDER BY expires_at LIMIT ? FOR UPDATE SKIP LOCKED)";
            case MARIADB, MYSQL -> "DELETE FROM " + table + " WHERE " + expired + " ORDER BY expires_at LIMIT ?";
            case H2 -> "DELETE FROM " + table + " WHERE " + expired + " FETCH FIRST ? ROWS ONLY";
        };
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setLong(1, now);
            ps.setLong(2, lapsedBefore);
            ps.setInt(3, limit);
            return ps.executeUpdate();
        }
    }

    // ---------------------------------------------------------------- helpers

    /**
     * H2 has no conflict-ignoring insert outside its compatibility modes. A plain insert waits for an uncommitted
     * row with the same key, and a unique violation does not abort an H2 transaction, so it is caught here.
     */
    private boolean insertH2(
            Connection c,
            String id,
            String state,
            String owner,
            long token,
            long expiresAt,
            @Nullable Long completedAt,
            @Nullable String fingerprint,
            int lockWaitSeconds)
            throws SQLException {
        String sql = "INSERT INTO " + table + " (" + COLUMNS + ") VALUES (?, ?, ?, ?, ?, ?, ?, NULL)";
        try (PreparedStatement ps = c.prepareStatement(sql);
                LockWait bound = LockWait.bound(dialect, ps, lockWaitSeconds)) {
            ps.setString(1, id);
            ps.setString(2, state);
            ps.setString(3, owner);
            ps.setLong(4, token);
            ps.setLong(5, expiresAt);
            if (completedAt == null) {
                ps.setNull(6, Types.BIGINT);
            } else {
                ps.setLong(6, completedAt);
            }
            setNullableString(ps, 7, fingerprint);
            return ps.executeUpdate() == 1;
        } catch (SQLException e) {
            if ("23505".equals(e.getSQLState())) {
                return false;
            }
            throw e;
        }
    }

    private static void setNullableString(PreparedStatement ps, int index, @Nullable String value) throws SQLException {
        if (value == null) {
            ps.setNull(index, Types.VARCHAR);
        } else {
            ps.setString(index, value);
        }
    }

    private static void setNullableBytes(PreparedStatement ps, int index, byte @Nullable [] value) throws SQLException {
        if (value == null) {
            ps.setNull(index, Types.VARBINARY);
        } else {
            ps.setBytes(index, value);
        }
    }

    private static String marks(int n) {
        return String.join(", ", Collections.nCopies(n, "?"));
    }

    private static <T> List<List<T>> chunks(List<T> all) {
        List<List<T>> chunks = new ArrayList<>();
        for (int i = 0; i < all.size(); i += CHUNK) {
            chunks.add(all.subList(i, Math.min(all.size(), i + CHUNK)));
        }
        return chunks;
    }
}
