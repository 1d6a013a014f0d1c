package dev.idem.outbox;

import dev.idem.StoreUnavailableException;
import dev.idem.jdbc.Dialect;
import dev.idem.outbox.spi.OutboxRecord;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/** Fetches the next batch of the owned shards' due messages. */
final class DueMessages {
    private static final System.Logger LOG = System.getLogger(OutboxRelay.class.getName());

    /** An unsent message as fetched, with its failure counts. */
    record Row(OutboxRecord record, int attempts, int refusals) {}

    private final RelayDatabase db;
    private final OutboxSql sql;
    private final int shards;
    private final int batchSize;
    private final Clock clock;
    private volatile boolean severalCommands;

    DueMessages(RelayDatabase db, OutboxSql sql, int shards, int batchSize, Clock clock) {
        this.db = db;
        this.sql = sql;
        this.shards = shards;
        this.batchSize = batchSize;
        this.clock = clock;
        this.severalCommands = sql.marksWithTheFetch();
    }

    /** PostgreSQL: true when no sender that skipped its notification is still in its transaction. */
    boolean sendersGone() {
        return db.run("looking for senders still in their transaction", c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.sendersGone());
                    ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        });
    }

    /**
     * Marks the previous batch's acknowledged messages sent and fetches the next batch, in one transaction: under load
     * a batch costs one transaction, like a hand-written relay's; on PostgreSQL also one statement ({@link
     * OutboxSql#marksWithTheFetch()}), unless the driver refuses a statement of several commands (pgjdbc splits it;
     * a driver that sends it to the server whole gets 42601): then the commands go one by one from then on.
     */
    List<Row> markAndFetch(SentMarks marks, List<Integer> owned) {
        List<OutboxRecord> marking = marks.pending();
        List<Row> batch;
        try {
            batch = db.run("fetching due messages", c -> fetch(c, marks, marking, owned, severalCommands));
        } catch (StoreUnavailableException e) {
            if (!severalCommands || !OutboxSql.refusesSeveralCommands(e)) {
                throw e;
            }
            severalCommands = false;
            LOG.log(
                    System.Logger.Level.INFO,
                    "the JDBC driver refuses a statement of several commands; the relay sends its mark, planner"
                            + " setting and fetch one by one (one round trip more per batch than with pgjdbc)");
            batch = db.run("fetching due messages", c -> fetch(c, marks, marking, owned, false));
        }
        marks.marked(marking);
        return batch;
    }

    private List<Row> fetch(
            Connection c, SentMarks marks, List<OutboxRecord> marking, List<Integer> owned, boolean oneStatement)
            throws SQLException {
        long now = clock.millis();
        List<Object> parameters = new ArrayList<>();
        parameters.add(now);
        parameters.addAll(owned);
        parameters.add(now);
        parameters.add(batchSize);
        String statement;
        List<Object> bound = parameters;
        if (oneStatement) {
            statement = sql.due(shards, owned.size());
            if (!marking.isEmpty()) {
                statement = sql.markSent(marking.size()) + "; " + statement;
                bound = new ArrayList<>(marks.parameters(c, marking));
                bound.addAll(parameters);
            }
        } else {
            if (sql.dialect == Dialect.POSTGRESQL) {
                try (Statement set = c.createStatement()) {
                    set.execute(OutboxSql.WALK_INDEXES);
                }
            }
            marks.write(c, marking);
            statement = sql.dueQuery(shards, owned.size());
        }
        List<Row> rows = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(statement)) {
            RelayDatabase.bind(ps, bound);
            try (ResultSet rs = OutboxSql.resultOfDue(ps)) {
                while (rs.next()) {
                    OutboxRecord record = new OutboxRecord(
                            rs.getLong(1),
                            rs.getString(2),
                            rs.getString(3),
                            rs.getString(4),
                            HeaderCodec.decode(rs.getString(5)),
                            rs.getBytes(6),
                            Instant.ofEpochMilli(rs.getLong(7)));
                    rows.add(new Row(record, rs.getInt(8), rs.getInt(9)));
                }
            }
        }
        return rows;
    }
}
