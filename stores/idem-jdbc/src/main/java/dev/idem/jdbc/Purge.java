package dev.idem.jdbc;

import dev.idem.ConfigurationException;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import javax.sql.DataSource;

/** Deletes expired completions in small batches, each its own transaction, so no lock is held for long. */
final class Purge {
    private Purge() {}

    static final int DEFAULT_BATCH_SIZE = 500;

    /**
     * How long past its lease a claim nobody took over is kept: it still belongs to its owner, who may complete it
     * late (a consumer paused past its lease), as Redis keeps it for its expiry margin (1 h by default).
     */
    static final Duration LAPSED_CLAIM_KEPT = Duration.ofHours(1);

    private static final System.Logger LOG = System.getLogger(Purge.class.getName());

    @FunctionalInterface
    interface Now {
        long millis(Connection c) throws SQLException;
    }

    static int checkBatchSize(int rows) {
        if (rows < 1 || rows > 10_000) {
            throw new ConfigurationException(
                    "purgeBatchSize must be 1 to 10,000 rows, got " + rows + ": small batches keep each delete short");
        }
        return rows;
    }

    static int run(DataSource dataSource, Sql sql, int batchSize, Now now, String store) {
        int total = 0;
        try (OwnedTransaction tx = OwnedTransaction.begin(dataSource, sql.dialect, true)) {
            long cutoff = now.millis(tx.connection());
            while (true) {
                int deleted = sql.purgeBatch(tx.connection(), cutoff, cutoff - LAPSED_CLAIM_KEPT.toMillis(), batchSize);
                OwnedTransaction.Commit commit = tx.commit();
                if (commit.fate() != OwnedTransaction.Fate.COMMITTED) {
                    throw Objects.requireNonNull(commit.cause());
                }
                total += deleted;
                if (deleted < batchSize) {
                    return total;
                }
            }
        } catch (SQLException e) {
            throw SqlErrors.translate(
                    e, store, sql.table, Schema.ddlResource(sql.dialect), "purge (after " + total + " rows)");
        }
    }

    static ScheduledFuture<?> schedule(
            ScheduledExecutorService scheduler, Duration interval, IntSupplier purge, String store) {
        Objects.requireNonNull(scheduler, "scheduler");
        if (interval == null || interval.isNegative() || interval.isZero()) {
            throw new ConfigurationException("purge interval must be a positive duration, got " + interval);
        }
        long millis = interval.toMillis();
        return scheduler.scheduleWithFixedDelay(
                () -> {
                    try {
                        int n = purge.getAsInt();
                        LOG.log(System.Logger.Level.DEBUG, "{0}: purged {1} expired rows", store, n);
                    } catch (RuntimeException e) {
                        LOG.log(System.Logger.Level.WARNING, store + ": purge failed, next run as planned", e);
                    }
                },
                millis,
                millis,
                TimeUnit.MILLISECONDS);
    }
}
