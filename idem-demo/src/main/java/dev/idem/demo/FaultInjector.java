package dev.idem.demo;

import java.util.SplittableRandom;
import java.util.function.LongSupplier;

/**
 * The faults of a consumer lab while the stream runs: storms of {@code kill -9} (one to N-1 consumers killed a few
 * hundred milliseconds apart, each while the effect count is rising if it rises within two seconds; one keeps
 * consuming unless a killed one is not back yet) between calms of two to five seconds, and the consumers' database sessions ended at evenly spread moments. Every fault
 * goes to the {@link FaultLog}.
 */
final class FaultInjector implements Runnable {
    private final ConsumerProcesses processes;
    private final DatabaseBackends backends;
    private final FaultLog log;
    private final LongSupplier lastGrowthNanos;
    private final long streamMillis;
    private final boolean kills;
    private final int dbKills;
    private final SplittableRandom random;
    private volatile boolean stopped;
    private long start;
    private int dbKillsDone;

    FaultInjector(
            ConsumerProcesses processes,
            DatabaseBackends backends,
            FaultLog log,
            LongSupplier lastGrowthNanos,
            long streamMillis,
            boolean kills,
            int dbKills,
            long seed) {
        this.processes = processes;
        this.backends = backends;
        this.log = log;
        this.lastGrowthNanos = lastGrowthNanos;
        this.streamMillis = streamMillis;
        this.kills = kills;
        this.dbKills = backends.unavailable().isPresent() ? 0 : dbKills;
        this.random = new SplittableRandom(seed);
    }

    void stop() {
        stopped = true;
    }

    @Override
    public void run() {
        start = System.nanoTime();
        long nextStorm = start + millis(2000 + random.nextInt(3000));
        while (!stopped && elapsedMillis(start) < streamMillis) {
            endSessionsWhenDue();
            if (kills && System.nanoTime() >= nextStorm) {
                storm();
                nextStorm = System.nanoTime() + millis(2000 + random.nextInt(3000));
            }
            pause(50);
        }
    }

    /** Ends the consumers' sessions at their evenly spread moments, also while a storm runs (it lasts seconds). */
    private void endSessionsWhenDue() {
        long due = start + millis((dbKillsDone + 1) * streamMillis / (dbKills + 1));
        if (dbKillsDone < dbKills && System.nanoTime() >= due) {
            endSessions();
            dbKillsDone++;
        }
    }

    private void storm() {
        int count = 1 + random.nextInt(Math.max(1, processes.count() - 1));
        for (int i = 0; i < count && !stopped; i++) {
            long waitUntil = System.nanoTime() + millis(2000);
            while (!busy() && System.nanoTime() < waitUntil && !stopped) {
                endSessionsWhenDue();
                pause(20);
            }
            processes.killOne(busy() ? " while busy (effects rising)" : " (no new effect in the last second)");
            endSessionsWhenDue();
            pause(300 + random.nextInt(600));
        }
    }

    private void endSessions() {
        try {
            int ended = backends.terminate();
            log.add("database sessions ended", ended + " session(s) of the consumers");
        } catch (Exception e) {
            log.add("database sessions ended", "failed: " + LabDatabase.rootMessage(e));
        }
    }

    private boolean busy() {
        return System.nanoTime() - lastGrowthNanos.getAsLong() < millis(1000);
    }

    private static long millis(long ms) {
        return ms * 1_000_000L;
    }

    private static long elapsedMillis(long start) {
        return (System.nanoTime() - start) / 1_000_000L;
    }

    private void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopped = true;
        }
    }
}
