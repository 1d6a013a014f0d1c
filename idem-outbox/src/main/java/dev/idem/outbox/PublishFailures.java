package dev.idem.outbox;

import dev.idem.RetryPolicy;
import dev.idem.outbox.spi.OutboxRecord;
import dev.idem.outbox.spi.PublishRefusedException;
import java.time.Clock;
import java.time.Instant;
import java.util.List;

/**
 * What a failed publish does to its message: backs it off after the retry policy's delay, or parks it at the policy's
 * bound of refusals ({@link PublishRefusedException}; a broker that does not answer never parks anything).
 */
final class PublishFailures {
    private static final System.Logger LOG = System.getLogger(OutboxRelay.class.getName());
    private static final int MAX_ERROR = 1000;

    private final RelayDatabase db;
    private final OutboxSql sql;
    private final RetryPolicy retryPolicy;
    private final Clock clock;
    private final OutboxListener listener;
    private final Retries retries;

    PublishFailures(
            RelayDatabase db,
            OutboxSql sql,
            RetryPolicy retryPolicy,
            Clock clock,
            OutboxListener listener,
            Retries retries) {
        this.db = db;
        this.sql = sql;
        this.retryPolicy = retryPolicy;
        this.clock = clock;
        this.listener = listener;
        this.retries = retries;
    }

    void record(DueMessages.Row row, Throwable cause) {
        boolean refused = cause instanceof PublishRefusedException;
        int attempts = row.attempts() + 1;
        int refusals = row.refusals() + (refused ? 1 : 0);
        String reason = describe(cause);
        long now = clock.millis();
        OutboxRecord record = row.record();
        if (refused && retryPolicy.exhausted(refusals)) {
            db.update(
                    "parking " + record.messageId(),
                    sql.park(),
                    List.of(attempts, refusals, now, reason, record.position()));
            LOG.log(
                    System.Logger.Level.ERROR,
                    "outbox message {0} (key {1}) parked after {2} refusals: {3}",
                    record.messageId(),
                    record.key(),
                    refusals,
                    reason);
            listener.parked(record, reason);
            return;
        }
        Instant retryAt = Instant.ofEpochMilli(now).plus(retryPolicy.delayAfter(attempts));
        db.update(
                "backing off " + record.messageId(),
                sql.backOff(),
                List.of(attempts, refusals, retryAt.toEpochMilli(), reason, record.position()));
        retries.backedOff(retryAt.toEpochMilli());
        listener.publishFailed(record, cause, refused, retryAt);
    }

    private static String describe(Throwable t) {
        String text = t.getClass().getSimpleName() + ": " + t.getMessage();
        return text.length() > MAX_ERROR ? text.substring(0, MAX_ERROR) : text;
    }
}
