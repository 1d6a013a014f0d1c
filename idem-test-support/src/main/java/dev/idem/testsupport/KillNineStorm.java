package dev.idem.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * The broker-neutral part of a kill -9 proof: consumer JVMs ({@link ChildJvm}) started as children, SIGKILLed at
 * random moments (half of the kills right while a debit's transaction is open) and restarted, and started again, as a
 * supervisor would, when one ends on its own (a start that failed under load, say); a drain bounded by
 * progress; the SQL verdict over a {@link PaymentBank} ledger. A broker's test keeps what is its own: how it publishes,
 * how its child consumer is started, and the broker's own "drained" check.
 */
public final class KillNineStorm implements AutoCloseable {
    /** Starts one consumer JVM of the broker under test. */
    @FunctionalInterface
    public interface ConsumerStarter {
        ChildJvm start() throws Exception;
    }

    /** How long a child that ended on its own stays down before it is started again. */
    static final Duration RESTART_PAUSE = Duration.ofMillis(500);

    private final ConsumerStarter starter;
    private final List<ChildJvm> children = new ArrayList<>();
    private final Random random = new Random();
    private final Object signals = new Object();
    private @Nullable ChildJvm signalled;
    private int kills;
    private int killsInTransaction;
    private int exitsOfTheirOwn;
    private boolean closed;

    private KillNineStorm(ConsumerStarter starter) {
        this.starter = starter;
    }

    /** Starts {@code consumers} children; {@link #close} kills those still alive. */
    public static KillNineStorm start(int consumers, ConsumerStarter starter) throws Exception {
        KillNineStorm storm = new KillNineStorm(starter);
        try {
            synchronized (storm.children) {
                for (int i = 0; i < consumers; i++) {
                    storm.children.add(storm.watched(starter.start()));
                }
            }
        } catch (Exception e) {
            storm.close();
            throw e;
        }
        return storm;
    }

    /**
     * {@code count} kills, each followed by a restart at once. Half of them wait up to {@code transactionWait} for a
     * child to open a debit's transaction and strike that child right then (a random child when none did); the
     * others strike a child picked at random after a random calm of 300 ms plus up to {@code maxCalm}, at any moment
     * of its life (starting, joining, polling, committing). Waiting for any child rather than one picked in advance
     * keeps the storm inside the stream: a child just restarted, or one without partitions, opens no transaction.
     */
    public void strike(int count, Duration transactionWait, Duration maxCalm) throws Exception {
        for (int k = 0; k < count; k++) {
            ChildJvm child = null;
            if (random.nextBoolean()) {
                child = awaitTransaction(transactionWait);
                if (child != null) {
                    killsInTransaction++;
                }
            } else {
                await().pollDelay(Duration.ofMillis(300 + random.nextInt((int) maxCalm.toMillis())))
                        .until(() -> true);
            }
            synchronized (children) {
                int victim = child == null ? random.nextInt(children.size()) : children.indexOf(child);
                if (victim < 0) { // it ended on its own meanwhile and was replaced
                    victim = random.nextInt(children.size());
                }
                child = children.get(victim);
                child.kill();
                System.out.printf("kill -9: child %d killed after %d transactions%n", victim, child.signals());
                kills++;
                children.set(victim, watched(starter.start()));
            }
        }
    }

    private ChildJvm watched(ChildJvm child) {
        child.onSignal(() -> {
            synchronized (signals) {
                signalled = child;
                signals.notifyAll();
            }
        });
        child.onExit(status -> CompletableFuture.runAsync(
                () -> startAgain(child, status),
                CompletableFuture.delayedExecutor(RESTART_PAUSE.toMillis(), TimeUnit.MILLISECONDS)));
        return child;
    }

    /**
     * Starts again a child that ended on its own. One that was killed is not in the list any more (the strike
     * replaced it, under the same lock, before this pause was over), nor is any once the storm is closed.
     */
    private void startAgain(ChildJvm ended, int status) {
        synchronized (children) {
            int slot = children.indexOf(ended);
            if (closed || slot < 0) {
                return;
            }
            System.out.printf("kill -9: child %d ended on its own (exit status %d), started again%n", slot, status);
            exitsOfTheirOwn++;
            try {
                children.set(slot, watched(starter.start()));
            } catch (Exception e) {
                System.out.printf("kill -9: child %d could not be started again: %s%n", slot, e);
            }
        }
    }

    /** The first child to open a debit's transaction within {@code timeout}, or null. */
    private @Nullable ChildJvm awaitTransaction(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (signals) {
            signalled = null;
            while (signalled == null || !isRunning(signalled)) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return null;
                }
                TimeUnit.NANOSECONDS.timedWait(signals, left);
            }
            return signalled;
        }
    }

    private boolean isRunning(ChildJvm child) {
        synchronized (children) {
            return children.contains(child);
        }
    }

    public int kills() {
        return kills;
    }

    public int killsInTransaction() {
        return killsInTransaction;
    }

    /** Children that ended without being killed, each started again. */
    public int exitsOfTheirOwn() {
        synchronized (children) {
            return exitsOfTheirOwn;
        }
    }

    /**
     * Waits until {@code remaining}, read every {@code poll}, reads 0. The bound is on progress, not on total time: it fails when the reading has
     * not changed for {@code stall}, however loaded the machine; a slow but moving drain only fails at {@code cap}.
     * {@code state} describes the backlog for the log and for a failure.
     */
    public static void awaitDrained(
            Duration stall, Duration cap, Duration poll, Callable<Long> remaining, Callable<String> state)
            throws Exception {
        long start = System.nanoTime();
        long lastProgress = start;
        Long last = null;
        while (true) {
            long left = remaining.call();
            long now = System.nanoTime();
            System.out.printf("kill -9 drain: %d remaining, %s, load %s%n", left, state.call(), loadAverage());
            if (left == 0) {
                return;
            }
            if (!Objects.equals(last, left)) {
                last = left;
                lastProgress = now;
            }
            boolean stalled = now - lastProgress > stall.toNanos();
            if (stalled || now - start > cap.toNanos()) {
                throw new AssertionError((stalled
                                ? "stalled: nothing moved for " + stall.toSeconds() + " s"
                                : "not drained in " + cap.toSeconds() + " s, though moving")
                        + "; " + left + " remaining, " + state.call() + ", load " + loadAverage());
            }
            await().pollDelay(poll).until(() -> true);
        }
    }

    /** The verdict: no payment of {@code account} debited twice, {@code payments} debited, the balance exact. */
    public static void assertEachDebitedOnce(PaymentBank bank, String account, long opening, long payments) {
        assertThat(bank.keysDebitedTwice(account)).as("payments debited twice").isZero();
        assertThat(bank.keysDebited(account))
                .as("payments debited (the rest are lost)")
                .isEqualTo(payments);
        assertThat(bank.balance(account)).isEqualTo(opening - payments);
    }

    /** The summary line of a run. */
    public void report(String broker, long payments) {
        System.out.printf(
                "kill -9 (%s): %d payments, %d kills (%d inside a transaction), %d ended on their own%n",
                broker, payments, kills, killsInTransaction, exitsOfTheirOwn());
    }

    private static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).trim();
        } catch (IOException e) {
            return "unknown";
        }
    }

    /** SIGKILLs every child still alive. */
    @Override
    public void close() {
        synchronized (children) {
            closed = true;
            children.forEach(ChildJvm::kill);
        }
    }
}
