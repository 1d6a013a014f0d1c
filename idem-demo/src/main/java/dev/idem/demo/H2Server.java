package dev.idem.demo;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.sql.SQLException;
import org.h2.tools.Server;

/**
 * The consumer lab's default database: an H2 TCP server on 127.0.0.1 (a free port), the database file in the output
 * directory, so that consumer processes and the lab share it. The consumers need the H2 driver.
 */
final class H2Server implements AutoCloseable {
    private final Server server;
    private final String url;

    private H2Server(Server server, String url) {
        this.server = server;
        this.url = url;
    }

    static H2Server start(Path directory) throws SQLException, IOException {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Server server = Server.createTcpServer(
                        "-tcpPort", Integer.toString(port), "-ifNotExists", "-baseDir", directory.toString())
                .start();
        return new H2Server(server, "jdbc:h2:tcp://127.0.0.1:" + port + "/idem-consumer-lab;LOCK_TIMEOUT=10000");
    }

    String url() {
        return url;
    }

    @Override
    public void close() {
        server.stop();
    }
}
