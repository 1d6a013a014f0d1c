package dev.idem.testsupport;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * A private nats-server with JetStream on file storage in its directory ({@code -js -sd <dir>}): streams and their
 * messages survive a stop, a restart and a kill.
 */
final class PrivateNats extends PrivateServer {
    static final String ENGINE = "nats";
    private static final Path SERVER = Path.of("/usr/sbin/nats-server");

    private final Path log;

    private PrivateNats(Path directory, int port) {
        super("NATS", directory, port);
        this.log = directory.resolve("nats.log");
    }

    /** Why no private NATS server can run here, if so. */
    static Optional<String> missing() {
        return Files.isExecutable(SERVER)
                ? Optional.empty()
                : Optional.of(SERVER + " is missing: install the nats-server package to get a private NATS server");
    }

    static PrivateServer create() {
        return started(new PrivateNats(newDirectory(ENGINE), FreePorts.any()));
    }

    @Override
    public String url() {
        return "nats://127.0.0.1:" + port();
    }

    @Override
    void initialize() {}

    @Override
    void launch() {
        launchForeground(
                List.of(
                        SERVER.toString(),
                        "-js",
                        "-a",
                        "127.0.0.1",
                        "-p",
                        Integer.toString(port()),
                        "-sd",
                        directory().resolve("jetstream").toString()),
                log,
                this::acceptsConnections);
    }

    private boolean acceptsConnections() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port()), 200);
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
