package dev.idem.outbox;

import dev.idem.outbox.spi.OutboxRecord;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;

/**
 * The messages the broker acknowledged and that are not marked sent yet, and their marking: in the transaction that
 * fetches the next batch ({@link DueMessages}), or in one of its own ({@link #flush()}). The listener hears of them
 * once marked. Not thread-safe: used within the relay's cycle.
 */
final class SentMarks {
    private final RelayDatabase db;
    private final OutboxSql sql;
    private final Clock clock;
    private final OutboxListener listener;
    private final List<OutboxRecord> acked = new ArrayList<>();

    SentMarks(RelayDatabase db, OutboxSql sql, Clock clock, OutboxListener listener) {
        this.db = db;
        this.sql = sql;
        this.clock = clock;
        this.listener = listener;
    }

    void acked(List<OutboxRecord> records) {
        acked.addAll(records);
    }

    /** The acknowledged messages to mark; pass them to {@link #write} and, once committed, to {@link #marked}. */
    List<OutboxRecord> pending() {
        return List.copyOf(acked);
    }

    /** Marks {@code records} sent on {@code c}, in its transaction. */
    void write(Connection c, List<OutboxRecord> records) throws SQLException {
        if (records.isEmpty()) {
            return;
        }
        RelayDatabase.update(c, sql.markSent(records.size()), parameters(c, records));
    }

    /** The parameters of {@link OutboxSql#markSent} for {@code records}, on {@code c}. */
    List<Object> parameters(Connection c, List<OutboxRecord> records) throws SQLException {
        List<Object> parameters = new ArrayList<>();
        parameters.add(clock.millis());
        if (sql.marksByArray()) {
            parameters.add(c.createArrayOf(
                    "bigint", records.stream().map(OutboxRecord::position).toArray()));
        } else {
            records.forEach(r -> parameters.add(r.position()));
        }
        return parameters;
    }

    /** {@code records} committed as sent: forgets them and tells the listener. */
    void marked(List<OutboxRecord> records) {
        if (!records.isEmpty()) {
            acked.clear();
            listener.published(records);
        }
    }

    /** Marks what is pending, in a transaction of its own. */
    void flush() {
        List<OutboxRecord> marking = pending();
        if (!marking.isEmpty()) {
            db.run("marking messages sent", c -> {
                write(c, marking);
                return marking.size();
            });
            marked(marking);
        }
    }
}
