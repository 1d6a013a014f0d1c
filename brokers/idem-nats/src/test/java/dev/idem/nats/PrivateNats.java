package dev.idem.nats;

import static org.awaitility.Awaitility.await;

import dev.idem.testsupport.TestServers;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;

/**
 * A nats-server of a test's own ({@code nats-server -js -a 127.0.0.1 -p <free> -sd <tmp>}) for tests that stop and
 * restart the server, which they must never do to the shared one. File storage survives {@link #restart()}.
 */
final class PrivateNats implements AutoCloseable {
    private static final Path BINARY = Path.of("/usr/sbin/nats-server");

    private final Path directory;
    private final int port;
    private volatile @Nullable Process process;

    private final Thread exitHook = new Thread(this::stop, "idem-private-nats-stop");

    private PrivateNats(Path directory, int port) {
        this.directory = directory;
        this.port = port;
        Runtime.getRuntime().addShutdownHook(exitHook);
    }

    /** Starts a fresh server, or skips the test (fails it under {@code IDEM_REQUIRE_SERVICES=1}) without the binary. */
    static PrivateNats start() {
        if (!Files.isExecutable(BINARY)) {
            return TestServers.unavailable(
                    "no " + BINARY + " to start a private NATS server (apt-get install nats-server)");
        }
        try {
            PrivateNats nats = new PrivateNats(Files.createTempDirectory("idem-private-nats-"), freePort());
            nats.startProcess();
            return nats;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare a private NATS server", e);
        }
    }

    String url() {
        return "nats://127.0.0.1:" + port;
    }

    /** Stops the server (SIGTERM; JetStream flushes its files) and waits until it is gone. */
    void stop() {
        Process p = process;
        if (p == null) {
            return;
        }
        p.destroy();
        try {
            if (!p.waitFor(20, TimeUnit.SECONDS)) {
                p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        process = null;
    }

    /** Starts the stopped server again on the same port and storage directory. */
    void restart() {
        stop();
        startProcess();
    }

    private void startProcess() {
        try {
            process = new ProcessBuilder(
                            BINARY.toString(),
                            "-js",
                            "-a",
                            "127.0.0.1",
                            "-p",
                            Integer.toString(port),
                            "-sd",
                            directory.toString())
                    .redirectErrorStream(true)
                    .redirectOutput(directory.resolve("server.log").toFile())
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + BINARY, e);
        }
        await().atMost(Duration.ofSeconds(20)).until(this::answers);
    }

    private boolean answers() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    @Override
    public void close() {
        stop();
        Runtime.getRuntime().removeShutdownHook(exitHook);
        try (Stream<Path> files = Files.walk(directory)) {
            files.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
        } catch (IOException e) {
            System.err.println("[idem-nats test] could not delete " + directory + ": " + e);
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
