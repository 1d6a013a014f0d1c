package dev.idem.internal;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Work still under way when its owner closes or the JVM exits, and the bounded wait for it. */
public final class UnderWay {
    private UnderWay() {}

    /** Waits for every one of {@code work} (however it ends) until {@code within} has passed; keeps an interrupt. */
    public static void awaitAll(List<? extends Future<?>> work, Duration within) {
        long deadline = System.nanoTime() + within.toNanos();
        for (Future<?> f : work) {
            try {
                f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (ExecutionException | TimeoutException e) {
                // its owner reports how it ended; a wait past the deadline is given up
            }
        }
    }

    /** Runs {@code hook} at the JVM's exit, unless the JVM is exiting already (the owner's close waits then). */
    public static void awaitAtExit(Thread hook) {
        try {
            Runtime.getRuntime().addShutdownHook(hook);
        } catch (IllegalStateException exiting) {
            // registered while the JVM exits: nothing is left to wait for at an exit under way
        }
    }

    /** Undoes {@link #awaitAtExit} (the owner closed); nothing to undo while the JVM exits. */
    public static void stopAwaitingAtExit(Thread hook) {
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException exiting) {
            // the hook runs anyway
        }
    }
}
