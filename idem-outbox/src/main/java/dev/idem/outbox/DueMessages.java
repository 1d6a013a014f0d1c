package dev.idem.outbox;

import dev.idem.outbox.spi.OutboxRecord;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/** Fetches the next batch of the owned shards' due messages. */
final class DueMessages {
    /** An unsent message as fetched, with its failure counts. */
    record Row(OutboxRecord record, int attempts, int refusals) {}

    private final RelayDatabase db;
    private final OutboxSql sql;
    private final int shards;
    private final int batchSize;
    private final Clock clock;

    DueMessages(RelayDatabase db, OutboxSql sql, int shards, int batchSize, Clock clock) {
        this.db = db;
        this.sql = sql;
        this.shards = shards;
        this.batchSize = batchSize;
        this.clock = clock;
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
     * OutboxSql#marksWithTheFetch()}).
     */
    List<Row> markAndFetch(SentMarks marks, List<Integer> owned) {
        long now = clock.millis();
        List<Object> parameters = new ArrayList<>();
        parameters.add(now);
        parameters.addAll(owned);
        parameters.add(now);
        parameters.add(batchSize);
        List<OutboxRecord> marking = marks.pending();
        List<Row> batch = db.run("fetching due messages", c -> {
            String statement = sql.due(shards, owned.size());
            List<Object> bound = parameters;
            if (!marking.isEmpty() && sql.marksWithTheFetch()) {
                statement = sql.markSent(marking.size()) + "; " + statement;
                bound = new ArrayList<>(marks.parameters(c, marking));
                bound.addAll(parameters);
            } else {
                marks.write(c, marking);
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
        });
        marks.marked(marking);
        return batch;
    }
}
