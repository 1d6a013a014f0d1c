package dev.idem.testsupport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * A real PostgreSQL, MariaDB, Redis or NATS server of a test's own: a throwaway instance of the binaries installed on the
 * machine, on a free port of 127.0.0.1, with its data in a fresh temporary directory. For tests that stop, restart or
 * kill a server, which they must never do to the shared servers on the default ports; and the last resort of {@link
 * TestServers} when no server answers on the default port.
 *
 * <pre>{@code
 * try (PrivateServer pg = PrivateServer.postgres();
 *         TestDatabase db = TestDatabase.postgres(pg.server(), "RestartTest")) {
 *     ...; pg.restart(); ...                    // the committed data is still there, the connections are not
 * }
 * }</pre>
 *
 * <table>
 *   <caption>How each engine is run</caption>
 *   <tr><th>engine</th><th>created with</th><th>{@link #start()}/{@link #stop()}</th><th>client URL</th></tr>
 *   <tr><td>PostgreSQL</td><td>{@code initdb -A trust -U postgres}</td><td>{@code pg_ctl start}, {@code pg_ctl stop
 *       -m fast}</td><td>{@code jdbc:postgresql://127.0.0.1:<port>/postgres?user=postgres}</td></tr>
 *   <tr><td>MariaDB</td><td>{@code mariadb-install-db}, root without password</td><td>{@code mariadbd}, SIGTERM</td>
 *       <td>{@code jdbc:mariadb://127.0.0.1:<port>/test?user=root}</td></tr>
 *   <tr><td>Redis</td><td>nothing: {@code --save "" --appendonly no}, so a stop loses every key</td><td>{@code
 *       redis-server}, SIGTERM</td><td>{@code redis://127.0.0.1:<port>}</td></tr>
 *   <tr><td>NATS</td><td>nothing: JetStream on file storage in the directory, kept over a stop</td><td>{@code
 *       nats-server -js}, SIGTERM</td><td>{@code nats://127.0.0.1:<port>}</td></tr>
 * </table>
 *
 * <p>Binaries: PostgreSQL's {@code initdb} and {@code pg_ctl} from the newest {@code /usr/lib/postgresql/<version>/bin}
 * (run as the {@code postgres} OS user when the JVM runs as root, since PostgreSQL refuses root), {@code
 * /usr/sbin/mariadbd} with {@code /usr/bin/mariadb-install-db}, {@code /usr/bin/redis-server}, {@code
 * /usr/sbin/nats-server}. When they are missing
 * the factory methods skip the test through {@link TestServers#unavailable(String)} (a failure with {@code
 * IDEM_REQUIRE_SERVICES=1}).
 *
 * <p>{@link #close()} stops the server and deletes its directory; a shutdown hook does the same for servers still
 * open when the JVM exits, and each new private server first removes those of JVMs that died without running their
 * hooks. Thread-safe: the lifecycle methods are serialised.
 */
public abstract sealed class PrivateServer implements AutoCloseable
        permits PrivatePostgres, PrivateMariaDb, PrivateRedis, PrivateNats {
    static final Duration START_TIMEOUT = Duration.ofSeconds(60);
    static final String DIRECTORY_PREFIX = "idem-private-";
    private static final String OWNER_FILE = "owner";
    private static final String PROCESS_FILE = "server.pid";

    private final String name;
    private final Path directory;
    private final int port;
    private final Thread exitHook;
    private boolean running;
    private boolean closed;

    PrivateServer(String name, Path directory, int port) {
        this.name = name;
        this.directory = directory;
        this.port = port;
        this.exitHook = new Thread(this::discardQuietly, "idem-private-" + name.toLowerCase() + "-" + port + "-stop");
    }

    /** A fresh PostgreSQL (trust authentication, user {@code postgres}), started. */
    public static PrivateServer postgres() {
        return create(PrivatePostgres.missing(), PrivatePostgres::create);
    }

    /** A fresh MariaDB (user {@code root} without password, database {@code test}), started. */
    public static PrivateServer mariadb() {
        return create(PrivateMariaDb.missing(), PrivateMariaDb::create);
    }

    /** A fresh Redis without persistence, started. */
    public static PrivateServer redis() {
        return create(PrivateRedis.missing(), PrivateRedis::create);
    }

    /** A fresh nats-server with JetStream on file storage, started. */
    public static PrivateServer nats() {
        return create(PrivateNats.missing(), PrivateNats::create);
    }

    private static PrivateServer create(Optional<String> missing, Supplier<PrivateServer> factory) {
        if (missing.isPresent()) {
            return TestServers.unavailable(missing.get());
        }
        return factory.get();
    }

    /** Initialises and starts {@code server} and registers its exit hook; cleans up if that fails. */
    static PrivateServer started(PrivateServer server) {
        try {
            server.initialize();
            server.start();
        } catch (RuntimeException e) {
            server.discardQuietly();
            throw e;
        }
        Runtime.getRuntime().addShutdownHook(server.exitHook);
        return server;
    }

    /** A new empty directory for a server of kind {@code engine}, marked as owned by this JVM. */
    static Path newDirectory(String engine) {
        sweepOrphans();
        try {
            Path dir = Files.createTempDirectory(DIRECTORY_PREFIX + engine + "-");
            ProcessHandle self = ProcessHandle.current();
            Files.writeString(dir.resolve(OWNER_FILE), self.pid() + " " + startOf(self));
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a directory for a private " + engine + " server", e);
        }
    }

    // ---------------------------------------------------------------- what a test uses

    /** The server in the form {@link TestServers} hands out. */
    public final TestServers.Server server() {
        return new TestServers.Server(name, url(), "127.0.0.1", port);
    }

    /** The URL in the form its client takes (see the table above). */
    public abstract String url();

    public final int port() {
        return port;
    }

    /** The directory that holds the server's data and logs; deleted by {@link #close()}. */
    public final Path directory() {
        return directory;
    }

    public final synchronized boolean isRunning() {
        return running;
    }

    /**
     * Starts the server again after {@link #stop()} or {@link #kill()}, on the same port and data directory (after a
     * kill, PostgreSQL and MariaDB run their crash recovery), and returns once it answers.
     */
    public final synchronized void start() {
        checkOpen();
        if (running) {
            return;
        }
        launch();
        running = true;
    }

    /**
     * Stops the server the way its service manager does (PostgreSQL: {@code pg_ctl stop -m fast}; MariaDB, Redis and
     * NATS: SIGTERM): open transactions are rolled back, connections closed, committed data kept (Redis keeps nothing).
     */
    public final synchronized void stop() {
        checkOpen();
        if (running) {
            shutdown();
            running = false;
        }
    }

    /** {@link #stop()} then {@link #start()}: a database restart as the clients see it. */
    public final synchronized void restart() {
        stop();
        start();
    }

    /** Kills the server and its child processes with SIGKILL, as a crash does. It stays down until {@link #start()}. */
    public final synchronized void kill() {
        checkOpen();
        killProcesses();
        running = false;
        afterKill();
    }

    private void killProcesses() {
        List<ProcessHandle> processes = processes();
        processes.forEach(ProcessHandle::destroyForcibly);
        try {
            Awaitility.await(this + " dies of SIGKILL")
                    .atMost(START_TIMEOUT)
                    .pollDelay(Duration.ZERO)
                    .pollInterval(Duration.ofMillis(10))
                    .until(() -> processes.stream().allMatch(PrivateServer::isDead));
        } catch (ConditionTimeoutException e) {
            throw new IllegalStateException(this + ": a process survived SIGKILL", e);
        }
    }

    /** Stops the server and deletes its directory. Idempotent. */
    @Override
    public final synchronized void close() {
        if (closed) {
            return;
        }
        discard();
        try {
            Runtime.getRuntime().removeShutdownHook(exitHook);
        } catch (IllegalStateException alreadyExiting) {
            // the hook runs anyway and finds the server discarded
        }
    }

    @Override
    public String toString() {
        return "private " + name + " on 127.0.0.1:" + port + " in " + directory;
    }

    // ---------------------------------------------------------------- what an engine implements

    /** Creates the empty data directory (initdb and the like). */
    abstract void initialize();

    /** Starts the server and returns once it answers, or throws with the tail of its log. */
    abstract void launch();

    /** Stops the server gracefully and returns once it has exited. Default: the foreground process, if any. */
    void shutdown() {
        if (foreground != null) {
            terminate(foreground);
            foreground = null;
        }
    }

    /** The server's processes, parents first; empty when it is not running. Default: the foreground process tree. */
    List<ProcessHandle> processes() {
        return withDescendants(foreground == null ? null : foreground.toHandle());
    }

    /** For a server that runs in the foreground: starts it, notes its pid and waits until {@code ready}. */
    final void launchForeground(List<String> command, Path log, Supplier<Boolean> ready) {
        Process started = spawn(command, log);
        foreground = started;
        recordProcess(started);
        awaitReady(started, ready);
    }

    private @Nullable Process foreground;

    /** Called when {@link #kill()} has killed every process. */
    void afterKill() {}

    /** Stops the server as fast as possible without leaving system resources behind (shared memory). */
    void stopForGood() {
        killProcesses();
    }

    // ---------------------------------------------------------------- shared machinery

    private synchronized void discard() {
        if (closed) {
            return;
        }
        closed = true;
        running = false;
        stopForGood(); // if this fails, the directory stays for the sweep of a later JVM to find the process
        deleteRecursively(directory);
    }

    private void discardQuietly() {
        try {
            discard();
        } catch (RuntimeException e) {
            System.err.println("[idem-testkit] could not stop " + this + ": " + e.getMessage());
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    /** Runs {@code command} to completion, its output appended to {@code log}; a non-zero exit throws. */
    final void run(List<String> command, Path log) {
        Process process = spawn(command, log);
        try {
            if (!process.waitFor(START_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw failure(String.join(" ", command) + " did not finish in " + START_TIMEOUT);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
            throw new IllegalStateException("interrupted while running " + command, e);
        }
        if (process.exitValue() != 0) {
            throw failure(String.join(" ", command) + " exited with " + process.exitValue());
        }
    }

    /** Starts {@code command} in {@link #directory()}, its output appended to {@code log}. */
    final Process spawn(List<String> command, Path log) {
        try {
            return new ProcessBuilder(command)
                    .directory(directory.toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + command, e);
        }
    }

    /** Waits until {@code ready} holds; fails early, with the logs, when {@code process} exits. */
    final void awaitReady(Process process, Supplier<Boolean> ready) {
        try {
            Awaitility.await(this + " answers")
                    .atMost(START_TIMEOUT)
                    .pollDelay(Duration.ZERO)
                    .pollInterval(Duration.ofMillis(25))
                    .until(() -> {
                        if (!process.isAlive()) {
                            throw failure("the server exited with " + process.exitValue());
                        }
                        return ready.get();
                    });
        } catch (ConditionTimeoutException e) {
            throw failure("the server did not answer within " + START_TIMEOUT);
        }
    }

    /** Stops {@code process} with SIGTERM and waits for it to exit. */
    final void terminate(Process process) {
        process.destroy();
        try {
            if (!process.waitFor(START_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
                throw new IllegalStateException(this + " did not stop within " + START_TIMEOUT + " after SIGTERM");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while stopping " + this, e);
        }
    }

    /** An error saying {@code what} went wrong, with the error lines and the last lines of every log in the directory. */
    final IllegalStateException failure(String what) {
        StringBuilder message = new StringBuilder(this + ": " + what);
        try (Stream<Path> logs = Files.list(directory)) {
            logs.filter(f -> f.getFileName().toString().endsWith(".log"))
                    .sorted()
                    .forEach(log -> message.append("\n--- ")
                            .append(log)
                            .append(", its error lines and its last lines:\n")
                            .append(excerpt(log)));
        } catch (IOException | UncheckedIOException e) {
            message.append(" (logs unreadable: ").append(e.getMessage()).append(")");
        }
        return new IllegalStateException(message.toString());
    }

    /** {@code process} and its descendants, parent first, or nothing when it has exited. */
    static List<ProcessHandle> withDescendants(@Nullable ProcessHandle process) {
        List<ProcessHandle> all = new ArrayList<>();
        if (process != null && process.isAlive()) {
            all.add(process);
            process.descendants().forEach(all::add);
        }
        return all;
    }

    /**
     * Exited, or a zombie: a killed process whose parent died too waits for the init process to reap it, which can
     * take a second or more in a container, while its sockets and memory are already gone.
     */
    static boolean isDead(ProcessHandle process) {
        if (!process.isAlive()) {
            return true;
        }
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(process.pid()), "stat"));
            return stat.substring(stat.lastIndexOf(')') + 1).trim().startsWith("Z");
        } catch (IOException | UncheckedIOException e) {
            return !process.isAlive();
        }
    }

    static boolean isRoot() {
        return "root".equals(System.getProperty("user.name"));
    }

    /** The lines before the last 15 that mention an error (a tool's advice can fill the tail), then the last 15. */
    static String excerpt(Path log) {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            int tail = Math.max(0, lines.size() - 15);
            List<String> excerpt = new ArrayList<>();
            lines.subList(0, tail).stream()
                    .filter(l -> l.contains("ERROR") || l.contains("FATAL"))
                    .limit(10)
                    .forEach(excerpt::add);
            if (!excerpt.isEmpty()) {
                excerpt.add("...");
            }
            excerpt.addAll(lines.subList(tail, lines.size()));
            return String.join("\n", excerpt);
        } catch (IOException | UncheckedIOException e) {
            return "(unreadable: " + e.getMessage() + ")";
        }
    }

    static void deleteRecursively(Path directory) {
        if (!Files.exists(directory)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            System.err.println("[idem-testkit] could not delete " + directory + ": " + e.getMessage());
        }
    }

    // ---------------------------------------------------------------- servers of dead JVMs

    private static String startOf(ProcessHandle process) {
        return process.info().startInstant().map(Instant::toString).orElse("?");
    }

    /** Stops and deletes the private servers whose JVM died without running its shutdown hooks. */
    private static void sweepOrphans() {
        Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
        try (Stream<Path> dirs = Files.list(tmp)) {
            dirs.filter(d -> d.getFileName().toString().startsWith(DIRECTORY_PREFIX))
                    .filter(PrivateServer::ownerIsGone)
                    .forEach(PrivateServer::removeOrphan);
        } catch (IOException | UncheckedIOException e) {
            System.err.println("[idem-testkit] could not look for orphaned private servers: " + e.getMessage());
        }
    }

    private static boolean ownerIsGone(Path dir) {
        Path owner = dir.resolve(OWNER_FILE);
        try {
            String[] parts = Files.readString(owner).trim().split(" ");
            Optional<ProcessHandle> jvm = ProcessHandle.of(Long.parseLong(parts[0]));
            return jvm.isEmpty() || !startOf(jvm.get()).equals(parts[1]);
        } catch (IOException | RuntimeException e) {
            return false; // not ours, or still being created: leave it alone
        }
    }

    private static void removeOrphan(Path dir) {
        try {
            String engine = dir.getFileName().toString().substring(DIRECTORY_PREFIX.length());
            if (engine.startsWith(PrivatePostgres.ENGINE + "-")) {
                PrivatePostgres.stopOrphan(dir);
            } else {
                killRecordedProcess(dir);
            }
            deleteRecursively(dir);
        } catch (RuntimeException e) {
            System.err.println("[idem-testkit] could not remove orphaned " + dir + ": " + e.getMessage());
        }
    }

    /** Notes the server process started by this JVM, so that a later JVM can kill it if this one dies. */
    final void recordProcess(Process process) {
        try {
            Files.writeString(directory.resolve(PROCESS_FILE), process.pid() + " " + startOf(process.toHandle()));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + directory.resolve(PROCESS_FILE), e);
        }
    }

    /** Kills the process noted by {@link #recordProcess(Process)} in {@code dir}, if it is still that process. */
    private static void killRecordedProcess(Path dir) {
        Path file = dir.resolve(PROCESS_FILE);
        if (!Files.exists(file)) {
            return;
        }
        try {
            String[] parts = Files.readString(file).trim().split(" ");
            ProcessHandle.of(Long.parseLong(parts[0]))
                    .filter(p -> startOf(p).equals(parts[1]))
                    .ifPresent(p -> {
                        p.destroyForcibly();
                        p.onExit().join();
                    });
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
