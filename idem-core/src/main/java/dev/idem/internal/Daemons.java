package dev.idem.internal;

import java.util.concurrent.ThreadFactory;

/**
 * Idem's background threads: daemons (they never keep the JVM alive) that hold nothing of the thread that starts
 * them — not its context class loader (an undeployed application's would stay reachable as long as the thread lives)
 * nor its inheritable thread locals.
 */
public final class Daemons {
    private Daemons() {}

    /** Creates each thread as {@link #thread} does, all named {@code name}. */
    public static ThreadFactory named(String name) {
        return task -> thread(name, task);
    }

    /** A daemon thread named {@code name} running {@code task}, not started. */
    public static Thread thread(String name, Runnable task) {
        Thread thread = new Thread(null, task, name, 0, false);
        thread.setDaemon(true);
        thread.setContextClassLoader(null);
        return thread;
    }
}
