package dev.idem.redis;

import dev.idem.testkit.TestServers;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;

/**
 * A redis-server of a test's own on a free port of 127.0.0.1, started the way the machine starts the shared one (no
 * RDB snapshots, no AOF), so that a restart loses every key. Never the shared server on 6379.
 */
final class PrivateRedis implements AutoCloseable {
    private static final Path BINARY = Path.of("/usr/bin/redis-server");

    private final int port;
    private Process process;

    private PrivateRedis(int port) {
        this.port = port;
    }

    static PrivateRedis start() {
        if (!Files.isExecutable(BINARY)) {
            return TestServers.unavailable(BINARY + " is missing: install the redis-server package");
        }
        PrivateRedis redis = new PrivateRedis(freePort());
        redis.launch();
        return redis;
    }

    String url() {
        return "redis://127.0.0.1:" + port;
    }

    int port() {
        return port;
    }

    /** Kills the server (SIGKILL, as a crash) and starts it again on the same port, empty. */
    void restart() {
        kill();
        launch();
    }

    private void launch() {
        try {
            process = new ProcessBuilder(List.of(
                            BINARY.toString(),
                            "--port",
                            Integer.toString(port),
                            "--bind",
                            "127.0.0.1",
                            "--save",
                            "",
                            "--appendonly",
                            "no",
                            "--daemonize",
                            "no"))
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start();
        } catch (IOException e) {
            throw new IllegalStateException("cannot start " + BINARY, e);
        }
        Awaitility.await("redis-server on port " + port)
                .atMost(Duration.ofSeconds(15))
                .pollInterval(Duration.ofMillis(20))
                .until(this::answersPing);
    }

    private boolean answersPing() {
        if (!process.isAlive()) {
            throw new IllegalStateException("redis-server on port " + port + " exited with " + process.exitValue());
        }
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 200);
            OutputStream out = s.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            byte[] buf = new byte[7];
            int n = in.readNBytes(buf, 0, 7);
            return new String(buf, 0, n, StandardCharsets.US_ASCII).equals("+PONG\r\n");
        } catch (IOException e) {
            return false;
        }
    }

    private void kill() {
        if (process == null) {
            return;
        }
        process.destroyForcibly();
        try {
            if (!process.waitFor(15, TimeUnit.SECONDS)) {
                throw new IllegalStateException("redis-server on port " + port + " did not die");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while killing redis-server", e);
        }
        process = null;
    }

    @Override
    public void close() {
        kill();
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException("no free port", e);
        }
    }
}
