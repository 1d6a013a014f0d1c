package dev.idem.testsupport;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;

/**
 * A consumer process for a kill -9 proof: a {@code main} class run in a JVM of its own on the test's classpath, its
 * stderr appended to a log file, its stdout read for lines starting with a signal, by default {@value
 * #TRANSACTION_OPEN} (the child prints one while a debit's transaction is open, so that the test can kill it right
 * then).
 */
public final class ChildJvm {
    /** What a child prints, followed by the key, while a debit's transaction is open. */
    public static final String TRANSACTION_OPEN = "TX ";
    /** A child's stdout, flushed at each line so that the test reads it at once. */
    private static final PrintStream CHILD_OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);

    private final Process process;
    private final String signal;
    private final Object lines = new Object();
    private boolean signalled;
    private int signals;
    private volatile Runnable onSignal = () -> {};

    private ChildJvm(Process process, String signal) {
        this.process = process;
        this.signal = signal;
        Thread reader = new Thread(this::read, "child-jvm-" + process.pid());
        reader.setDaemon(true);
        reader.start();
    }

    /** Starts {@code mainClass} with {@code args} in a JVM with a small heap; its stderr is appended to {@code log}. */
    public static ChildJvm start(Class<?> mainClass, Path log, String... args) throws IOException {
        return start(TRANSACTION_OPEN, mainClass, log, args);
    }

    /** The same, watching stdout for lines starting with {@code signal}. */
    public static ChildJvm start(String signal, Class<?> mainClass, Path log, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx160m",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                System.getProperty("java.class.path"),
                mainClass.getName()));
        command.addAll(List.of(args));
        ProcessBuilder builder =
                new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()));
        builder.environment().remove("JAVA_TOOL_OPTIONS");
        return new ChildJvm(builder.start(), signal);
    }

    private void read() {
        try (BufferedReader in =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.startsWith(signal)) {
                    synchronized (lines) {
                        signals++;
                        signalled = true;
                        lines.notifyAll();
                    }
                    onSignal.run();
                }
            }
        } catch (IOException e) {
            // the process was killed
        }
    }

    /**
     * Waits for the next signal line (right after a {@value #TRANSACTION_OPEN} line, a debit's transaction is open);
     * false when none came within {@code timeout}.
     */
    public boolean awaitSignal(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (lines) {
            signalled = false;
            while (!signalled) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(lines, left);
            }
            return true;
        }
    }

    /** Runs {@code action} on the thread that reads the child's stdout at each signal line from now on. */
    public void onSignal(Runnable action) {
        this.onSignal = action;
    }

    /** How many signal lines the child printed so far. */
    public int signals() {
        synchronized (lines) {
            return signals;
        }
    }

    /**
     * In a child, inside a debit's transaction on {@code c}: prints {@value #TRANSACTION_OPEN} and the key (so that the
     * test can kill it right then), holds one debit in ten open 30 ms longer (a wider window for that kill), then
     * debits.
     */
    public static void debitWithTransactionOpen(Connection c, String account, long amount, String key)
            throws SQLException, InterruptedException {
        CHILD_OUT.println(TRANSACTION_OPEN + key);
        if (ThreadLocalRandom.current().nextInt(10) == 0) {
            Thread.sleep(30);
        }
        PaymentBank.debit(c, account, amount, key);
    }

    /** Runs {@code action} with the exit status once the process ends, killed or not. */
    public void onExit(IntConsumer action) {
        process.onExit().thenAccept(p -> action.accept(p.exitValue()));
    }

    /** SIGKILL: no shutdown hook, no close, no commit, no ack, no lease handed back. */
    public void kill() {
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
