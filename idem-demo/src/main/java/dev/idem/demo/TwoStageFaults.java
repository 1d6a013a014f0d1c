package dev.idem.demo;

import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * The two-stage run's {@code kill -9} storm while the orders are sent: a random service's process every 0.5 to 1.5 s,
 * the first 1.5 s after the sending began. The in-process crashes right after an effect committed are the services'
 * own ({@code --crash-after-max}); both go to the {@link FaultLog} through {@link ConsumerProcesses}.
 */
final class TwoStageFaults {
    private final boolean kills;
    private final List<ConsumerProcesses> services;
    private final SplittableRandom random;
    private long nextKill = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1500);

    /** A storm that starts now, drawn from {@code seed}; none when {@code kills} is false. */
    TwoStageFaults(boolean kills, long seed, List<ConsumerProcesses> services) {
        this.kills = kills;
        this.services = services;
        this.random = new SplittableRandom(seed);
    }

    /** Called after each order sent: kills a process when the next kill is due. */
    void afterOrder() {
        if (kills && System.nanoTime() >= nextKill) {
            services.get(random.nextInt(services.size())).killOne(": while the orders are sent");
            nextKill = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500 + random.nextInt(1000));
        }
    }
}
