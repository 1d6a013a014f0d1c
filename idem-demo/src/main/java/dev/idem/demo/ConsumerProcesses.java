package dev.idem.demo;

import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * N copies of the user's consumer, each started by {@code setsid sh -c <command>} so that it leads a process group of
 * its own: {@link #kill} sends {@code SIGKILL} to the whole group (a JVM started by a script dies with the script).
 * A copy that exits on its own, or is killed, is started again after a random pause; its output goes to {@code
 * consumer-<i>.log} in the output directory. A kill goes to a copy that has had the time to join ({@link #joinedAfter}):
 * a copy still starting holds no message, and on a loaded machine (a JVM starting for seconds) kills of such copies
 * left a consumer that loses messages undetected.
 */
final class ConsumerProcesses implements AutoCloseable {
    private static final long MIN_PAUSE_MILLIS = 200;
    private static final long MAX_PAUSE_MILLIS = 2500;

    private final String name;
    private final ConsumerCommand command;
    private final Map<String, String> placeholders;
    private final Path out;
    private final FaultLog log;
    private final SplittableRandom random;
    private final Slot[] slots;
    private final ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "idem-lab-processes");
        t.setDaemon(true);
        return t;
    });
    private final Thread onExit = new Thread(this::close, "idem-lab-consumers-stop");
    private volatile boolean closed;
    private volatile long lastChangeNanos = System.nanoTime();
    private volatile long joinNanos;

    /** One consumer copy; {@code process} is null while it waits for its restart. */
    private static final class Slot {
        final int instance;

        @Nullable
        Process process;

        int starts;

        long startedNanos;

        Slot(int instance) {
            this.instance = instance;
        }
    }

    ConsumerProcesses(
            ConsumerCommand command, Map<String, String> placeholders, int count, Path out, FaultLog log, long seed) {
        this("consumer", command, placeholders, count, out, log, seed);
    }

    /** Copies named {@code name} in the log and in their output files ({@code <name>-<i>.log}). */
    ConsumerProcesses(
            String name,
            ConsumerCommand command,
            Map<String, String> placeholders,
            int count,
            Path out,
            FaultLog log,
            long seed) {
        this.name = name;
        this.command = command;
        this.placeholders = placeholders;
        this.out = out;
        this.log = log;
        this.random = new SplittableRandom(seed);
        this.slots = new Slot[count];
        for (int i = 0; i < count; i++) {
            slots[i] = new Slot(i + 1);
        }
    }

    /** The command line of copy {@code instance}, every placeholder replaced. */
    String commandOf(int instance) {
        Map<String, String> values = new HashMap<>(placeholders);
        values.put("instance", Integer.toString(instance));
        return command.expand(values);
    }

    /** {@link #commandOf} for printing: the (long) class path left as {@code {classpath}}. */
    String displayCommandOf(int instance) {
        Map<String, String> values = new HashMap<>(placeholders);
        values.put("instance", Integer.toString(instance));
        values.put("classpath", "{classpath}");
        return command.expand(values).replace("'{classpath}'", "{classpath}");
    }

    /**
     * Starts every copy and watches them: a copy that exits is logged and restarted after a random pause. A lab
     * stopped by Ctrl-C kills them too.
     */
    synchronized void start() throws IOException {
        Runtime.getRuntime().addShutdownHook(onExit);
        for (Slot s : slots) {
            launch(s);
        }
        scheduler.scheduleWithFixedDelay(this::watch, 100, 100, TimeUnit.MILLISECONDS);
    }

    int count() {
        return slots.length;
    }

    /** When a copy last started, exited or was killed ({@link System#nanoTime()}). */
    long lastChangeNanos() {
        return lastChangeNanos;
    }

    synchronized long running() {
        return java.util.Arrays.stream(slots)
                .filter(s -> s.process != null && s.process.isAlive())
                .count();
    }

    /** How long the copies took to join the broker at the start: a copy up for less is taken to be still starting. */
    void joinedAfter(long nanos) {
        joinNanos = nanos;
    }

    /**
     * {@code kill -9} of a running copy's process group, a random one of those up for at least the join time (when
     * none is, the one up the longest); it is restarted after a random pause.
     */
    synchronized Optional<Integer> killOne(String why) {
        long now = System.nanoTime();
        List<Slot> joined = new ArrayList<>();
        Slot longestUp = null;
        for (Slot s : slots) {
            if (s.process != null && s.process.isAlive()) {
                if (now - s.startedNanos >= joinNanos) {
                    joined.add(s);
                }
                if (longestUp == null || s.startedNanos < longestUp.startedNanos) {
                    longestUp = s;
                }
            }
        }
        if (longestUp == null) {
            return Optional.empty();
        }
        Slot s = joined.isEmpty() ? longestUp : joined.get(random.nextInt(joined.size()));
        kill(s, "kill -9", String.format(Locale.ROOT, "%s, up %.1f s", why, (now - s.startedNanos) / 1e9));
        restartLater(s);
        return Optional.of(s.instance);
    }

    /** Starts at once every copy that waits for its restart (the drain must not wait for random pauses). */
    synchronized void restartWaiting() throws IOException {
        for (Slot s : slots) {
            if (s.process == null) {
                launch(s);
                log.add("restart", name + " " + s.instance + " at the end of the stream, without a pause");
            }
        }
    }

    private void kill(Slot s, String kind, String why) {
        Process p = s.process;
        if (p == null) {
            return;
        }
        long group = p.pid();
        try {
            new ProcessBuilder("kill", "-KILL", "--", "-" + group)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start()
                    .waitFor(5, TimeUnit.SECONDS);
        } catch (IOException e) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        p.destroyForcibly();
        s.process = null;
        lastChangeNanos = System.nanoTime();
        log.add(kind, name + " " + s.instance + " (process group " + group + ")" + why);
    }

    private void restartLater(Slot s) {
        long pause = MIN_PAUSE_MILLIS + random.nextLong(MAX_PAUSE_MILLIS - MIN_PAUSE_MILLIS);
        scheduler.schedule(
                () -> {
                    synchronized (this) {
                        if (!closed && s.process == null) {
                            launchQuietly(s, pause);
                        }
                    }
                },
                pause,
                TimeUnit.MILLISECONDS);
    }

    private synchronized void watch() {
        for (Slot s : slots) {
            Process p = s.process;
            if (p != null && !p.isAlive() && !closed) {
                s.process = null;
                lastChangeNanos = System.nanoTime();
                log.add(
                        "exit",
                        name + " " + s.instance + " exited on its own with status " + p.exitValue() + " (see " + name
                                + "-" + s.instance + ".log)");
                restartLater(s);
            }
        }
    }

    private void launchQuietly(Slot s, long pause) {
        try {
            launch(s);
            log.add("restart", name + " " + s.instance + " after a pause of " + pause + " ms");
        } catch (IOException e) {
            log.add("exit", name + " " + s.instance + " could not be started: " + e.getMessage());
            restartLater(s);
        }
    }

    private void launch(Slot s) throws IOException {
        File logFile = out.resolve(name + "-" + s.instance + ".log").toFile();
        ProcessBuilder pb = new ProcessBuilder("setsid", "sh", "-c", commandOf(s.instance))
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile))
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        pb.environment().put("IDEM_LAB_INSTANCE", Integer.toString(s.instance));
        s.process = pb.start();
        s.starts++;
        s.startedNanos = System.nanoTime();
        lastChangeNanos = s.startedNanos;
    }

    /** Kills every copy's process group. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (Thread.currentThread() != onExit) {
            try {
                Runtime.getRuntime().removeShutdownHook(onExit);
            } catch (IllegalStateException | IllegalArgumentException e) {
                // the JVM is shutting down, or start() was never called
            }
        }
        scheduler.shutdownNow();
        for (Slot s : slots) {
            if (s.process != null) {
                Process p = s.process;
                kill(s, "stop", ": end of the run");
                try {
                    p.waitFor(5, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }
}
