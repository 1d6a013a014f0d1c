package dev.idem.demo;

import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicLong;

/** Polls the effect count in the background: when it last grew tells the faults when the consumers are busy. */
final class EffectWatch {
    private final EffectsQuery effects;
    private final AtomicLong lastGrowth;
    private final Thread thread;
    private volatile boolean stopped;

    EffectWatch(EffectsQuery effects, AtomicLong lastGrowth) {
        this.effects = effects;
        this.lastGrowth = lastGrowth;
        this.thread = new Thread(this::watch, "idem-lab-effect-watch");
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    void stop() throws InterruptedException {
        stopped = true;
        thread.join();
    }

    private void watch() {
        long last = -1;
        while (!stopped) {
            try {
                long n = effects.count();
                if (n != last) {
                    last = n;
                    lastGrowth.set(System.nanoTime());
                }
            } catch (SQLException e) {
                // a session ended by the lab, or the table not created yet: next round
            }
            try {
                Thread.sleep(250);
            } catch (InterruptedException e) {
                return;
            }
        }
    }
}
