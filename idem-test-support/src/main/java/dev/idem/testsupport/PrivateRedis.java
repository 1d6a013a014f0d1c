package dev.idem.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * A private Redis, started the way the machine starts the shared one: no RDB snapshots, no AOF, so that a stop, a
 * restart or a kill loses every key.
 */
final class PrivateRedis extends PrivateServer {
    static final String ENGINE = "redis";
    private static final Path SERVER = Path.of("/usr/bin/redis-server");

    private final Path log;

    private PrivateRedis(Path directory, int port) {
        super("Redis", directory, port);
        this.log = directory.resolve("redis.log");
    }

    /** Why no private Redis can run here, if so. */
    static Optional<String> missing() {
        return Files.isExecutable(SERVER)
                ? Optional.empty()
                : Optional.of(SERVER + " is missing: install the redis-server package to get a private Redis");
    }

    static PrivateServer create() {
        return started(new PrivateRedis(newDirectory(ENGINE), FreePorts.any()));
    }

    @Override
    public String url() {
        return "redis://127.0.0.1:" + port();
    }

    @Override
    void initialize() {}

    @Override
    void launch() {
        launchForeground(
                List.of(
                        SERVER.toString(),
                        "--port",
                        Integer.toString(port()),
                        "--bind",
                        "127.0.0.1",
                        "--save",
                        "",
                        "--appendonly",
                        "no",
                        "--daemonize",
                        "no",
                        "--dir",
                        directory().toString()),
                log,
                this::answersPing);
    }

    private boolean answersPing() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port()), 200);
            s.setSoTimeout(1000);
            OutputStream out = s.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            return new String(in.readNBytes(7), StandardCharsets.US_ASCII).equals("+PONG\r\n");
        } catch (IOException e) {
            return false;
        }
    }
}
