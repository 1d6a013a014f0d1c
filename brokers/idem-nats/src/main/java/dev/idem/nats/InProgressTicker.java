package dev.idem.nats;

import io.nats.client.Message;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Sends {@code inProgress()} for each message in hand, so that AckWait never redelivers a message that a worker
 * still holds. One daemon thread per consumer.
 */
final class InProgressTicker implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(InProgressTicker.class.getName());

    private final Duration every;
    private final ScheduledThreadPoolExecutor scheduler;

    InProgressTicker(Duration every, String name) {
        this.every = every;
        this.scheduler = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "idem-nats-" + name + "-in-progress");
            t.setDaemon(true);
            return t;
        });
        scheduler.setRemoveOnCancelPolicy(true);
    }

    /** Marks {@code message} in progress every period until the returned tick is stopped. */
    Tick start(Message message) {
        long period = every.toMillis();
        return new Tick(scheduler.scheduleAtFixedRate(() -> mark(message), period, period, TimeUnit.MILLISECONDS));
    }

    private static void mark(Message message) {
        try {
            message.inProgress();
        } catch (RuntimeException e) {
            // Connection closed or reconnecting: the next tick tries again; AckWait decides meanwhile.
            LOG.log(System.Logger.Level.DEBUG, () -> "inProgress() not sent: " + e);
        }
    }

    @Override
    public void close() {
        scheduler.shutdownNow();
    }

    /** One message's in-progress signals. */
    static final class Tick {
        private final ScheduledFuture<?> future;

        private Tick(ScheduledFuture<?> future) {
            this.future = future;
        }

        void stop() {
            future.cancel(false);
        }
    }
}
