package dev.idem.redis;

import dev.idem.testsupport.FreePorts;
import dev.idem.testsupport.TestServers;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Stream;
import org.awaitility.Awaitility;

/**
 * One redis-server (or Sentinel) process of a test's own, on a free port of 127.0.0.1, without persistence, in a
 * fresh temporary directory: for replicas, clusters and Sentinels, which the shared server cannot be. {@link #pause()}
 * (SIGSTOP) freezes it so that its master's last writes do not reach it; {@link #kill()} is a crash. A shutdown hook
 * kills what the test left running.
 */
final class RedisProcess implements AutoCloseable {
    private static final Path SERVER = Path.of("/usr/bin/redis-server");

    private final String name;
    private final int port;
    private final Path directory;
    private final Process process;
    private final Thread exitHook;
    private RedisClient client;
    private StatefulRedisConnection<String, String> connection;

    private RedisProcess(String name, int port, Path directory, Process process) {
        this.name = name;
        this.port = port;
        this.directory = directory;
        this.process = process;
        this.exitHook = new Thread(process::destroyForcibly, "redis-process-" + port + "-kill");
        Runtime.getRuntime().addShutdownHook(exitHook);
    }

    /** A Redis server started with {@code args} added to its command line, answering PING. */
    static RedisProcess server(String name, String... args) {
        int port = FreePorts.any();
        List<String> command = new ArrayList<>(List.of(
                SERVER.toString(),
                "--port",
                Integer.toString(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no"));
        command.addAll(List.of(args));
        return start(name, port, command);
    }

    /** A Sentinel watching the master on {@code masterPort} as {@code masterName}, with a quorum of 1. */
    static RedisProcess sentinel(String masterName, int masterPort, Duration downAfter) {
        int port = FreePorts.any();
        Path directory = newDirectory();
        Path config = directory.resolve("sentinel.conf");
        try {
            Files.writeString(
                    config,
                    String.join(
                            "\n",
                            "port " + port,
                            "bind 127.0.0.1",
                            "daemonize no",
                            "sentinel monitor " + masterName + " 127.0.0.1 " + masterPort + " 1",
                            "sentinel down-after-milliseconds " + masterName + " " + downAfter.toMillis(),
                            "sentinel failover-timeout " + masterName + " 10000",
                            ""));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return start("sentinel", port, directory, List.of(SERVER.toString(), config.toString(), "--sentinel"));
    }

    private static RedisProcess start(String name, int port, List<String> command) {
        return start(name, port, newDirectory(), command);
    }

    private static RedisProcess start(String name, int port, Path directory, List<String> command) {
        if (!Files.isExecutable(SERVER)) {
            return TestServers.unavailable(SERVER + " is missing: install the redis-server package");
        }
        List<String> withDir = new ArrayList<>(command);
        if (!command.contains("--sentinel")) {
            withDir.addAll(List.of("--dir", directory.toString()));
        }
        Process process;
        try {
            process = new ProcessBuilder(withDir)
                    .directory(directory.toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(directory.resolve(name + ".log").toFile())
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + withDir, e);
        }
        RedisProcess redis = new RedisProcess(name, port, directory, process);
        Awaitility.await(redis + " answers")
                .atMost(Duration.ofSeconds(30))
                .pollInterval(Duration.ofMillis(25))
                .ignoreExceptions()
                .until(() -> redis.sync(c -> c.ping()).equals("PONG"));
        return redis;
    }

    int port() {
        return port;
    }

    boolean isAlive() {
        return process.isAlive();
    }

    String url() {
        return "redis://127.0.0.1:" + port;
    }

    /** Runs {@code query} on this process's own connection. */
    synchronized <T> T sync(Function<RedisCommands<String, String>, T> query) {
        if (connection == null) {
            RedisClient c = RedisClient.create(url());
            try {
                connection = c.connect();
            } catch (RuntimeException e) {
                c.shutdown(Duration.ZERO, Duration.ofSeconds(1));
                throw e;
            }
            client = c;
        }
        return query.apply(connection.sync());
    }

    /** One line of {@code INFO}, e.g. {@code info("replication", "role")}. */
    String info(String section, String field) {
        return sync(c -> c.info(section))
                .lines()
                .filter(l -> l.startsWith(field + ":"))
                .map(l -> l.substring(field.length() + 1).trim())
                .findFirst()
                .orElse("");
    }

    /** Freezes the process (SIGSTOP): it neither answers nor receives its master's writes until {@link #resume()}. */
    void pause() {
        signal("STOP");
    }

    void resume() {
        signal("CONT");
    }

    private void signal(String signal) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid()))
                    .inheritIO()
                    .start();
            if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
                throw new IllegalStateException("kill -" + signal + " " + process.pid() + " failed");
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** SIGKILL, as a crash: the process loses every key it held. */
    synchronized void kill() {
        closeConnection();
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void closeConnection() {
        if (client != null) {
            connection.close();
            client.shutdown(Duration.ZERO, Duration.ofSeconds(1));
            client = null;
            connection = null;
        }
    }

    @Override
    public synchronized void close() {
        if (process.isAlive()) {
            resume();
        }
        kill();
        try {
            Runtime.getRuntime().removeShutdownHook(exitHook);
        } catch (IllegalStateException alreadyExiting) {
            // the hook runs anyway
        }
        try (Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            System.err.println("could not delete " + directory + ": " + e.getMessage());
        }
    }

    @Override
    public String toString() {
        return "redis " + name + " on 127.0.0.1:" + port;
    }

    private static Path newDirectory() {
        try {
            return Files.createTempDirectory("idem-redis-process-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
