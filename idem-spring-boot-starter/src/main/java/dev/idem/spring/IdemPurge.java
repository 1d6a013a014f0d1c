package dev.idem.spring;

import dev.idem.jdbc.JdbcInbox;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.context.SmartLifecycle;

/**
 * Deletes expired marks of the idempotency table every {@code idem.jdbc.purge-interval} (zero: never), on a daemon
 * thread of its own, while the application runs. The purge covers the whole table, every namespace.
 */
public final class IdemPurge implements SmartLifecycle {
    private static final System.Logger LOG = System.getLogger(IdemPurge.class.getName());

    private final DataSource dataSource;
    private final IdemProperties.Jdbc settings;
    private @Nullable ScheduledExecutorService scheduler;
    private @Nullable ScheduledFuture<?> schedule;
    private @Nullable JdbcInbox purger;

    public IdemPurge(DataSource dataSource, IdemProperties.Jdbc settings) {
        this.dataSource = dataSource;
        this.settings = settings;
    }

    /** Deletes the expired marks now; returns how many. */
    public int purgeNow() {
        return purger().purgeExpired();
    }

    @Override
    public synchronized void start() {
        Duration interval = settings.getPurgeInterval();
        if (interval.isZero() || interval.isNegative() || scheduler != null) {
            return;
        }
        scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "idem-purge");
            t.setDaemon(true);
            return t;
        });
        schedule = scheduler.scheduleWithFixedDelay(
                this::purgeQuietly, interval.toMillis(), interval.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Override
    public synchronized void stop() {
        if (schedule != null) {
            schedule.cancel(false);
            schedule = null;
        }
        if (scheduler != null) {
            scheduler.shutdownNow();
            scheduler = null;
        }
    }

    @Override
    public synchronized boolean isRunning() {
        return schedule != null;
    }

    private void purgeQuietly() {
        try {
            purgeNow();
        } catch (RuntimeException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "purge of " + settings.getTable() + " failed; next try in " + settings.getPurgeInterval(),
                    e);
        }
    }

    private synchronized JdbcInbox purger() {
        if (purger == null) {
            // The namespace only names the purger in logs: the purge deletes expired rows of every namespace.
            purger = JdbcInbox.builder(dataSource)
                    .namespace("idem-purge")
                    .table(settings.getTable())
                    .build();
        }
        return purger;
    }
}
