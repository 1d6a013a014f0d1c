package dev.idem.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A private MariaDB: {@code mariadb-install-db} (root without password, database {@code test}), then {@code mariadbd}
 * with {@code --no-defaults}, so that nothing of the machine's {@code my.cnf} (port 3306, its socket, its data
 * directory) applies; the server settings the machine's configuration sets (utf8mb4, skip-name-resolve) are repeated
 * here. As root, the server runs with {@code --user=root}. Its temporary files go to its own directory: two installs
 * sharing {@code /tmp} at once abort now and then ("Could not remove temporary table", then "Unknown table
 * 'mysql.tmp_user_sys'"), a third of them under load.
 */
final class PrivateMariaDb extends PrivateServer {
    static final String ENGINE = "mariadb";
    private static final Path SERVER = Path.of("/usr/sbin/mariadbd");
    private static final Path INSTALL_DB = Path.of("/usr/bin/mariadb-install-db");
    private static final String LOG_FILE_SIZE = "--innodb-log-file-size=8M";

    private final Path data;
    private final Path temporary;
    private final Path log;

    private PrivateMariaDb(Path directory, int port) {
        super("MariaDB", directory, port);
        this.data = directory.resolve("data");
        this.temporary = directory.resolve("tmp");
        this.log = directory.resolve("mariadb.log");
    }

    /** Why no private MariaDB can run here, if so. */
    static Optional<String> missing() {
        if (!Files.isExecutable(SERVER) || !Files.isExecutable(INSTALL_DB)) {
            return Optional.of(SERVER + " or " + INSTALL_DB
                    + " is missing: install the mariadb-server package to get a private MariaDB");
        }
        return Optional.empty();
    }

    static PrivateServer create() {
        return started(new PrivateMariaDb(newDirectory(ENGINE), FreePorts.any()));
    }

    @Override
    public String url() {
        return "jdbc:mariadb://127.0.0.1:" + port() + "/test?user=root";
    }

    @Override
    void initialize() {
        try {
            Files.createDirectories(temporary);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + temporary, e);
        }
        List<String> command = new ArrayList<>(List.of(
                INSTALL_DB.toString(),
                "--no-defaults",
                "--datadir=" + data,
                "--tmpdir=" + temporary,
                "--auth-root-authentication-method=normal",
                "--skip-name-resolve",
                LOG_FILE_SIZE));
        command.add("--user=" + System.getProperty("user.name"));
        run(command, directory().resolve("install.log"));
    }

    @Override
    void launch() {
        List<String> command = new ArrayList<>(List.of(
                SERVER.toString(),
                "--no-defaults",
                "--datadir=" + data,
                "--tmpdir=" + temporary,
                "--port=" + port(),
                "--bind-address=127.0.0.1",
                "--socket=" + directory().resolve("mariadbd.sock"),
                "--pid-file=" + directory().resolve("mariadbd.pid"),
                "--skip-name-resolve",
                "--character-set-server=utf8mb4",
                "--collation-server=utf8mb4_general_ci",
                LOG_FILE_SIZE));
        if (PrivateServer.isRoot()) {
            command.add("--user=root");
        }
        launchForeground(command, log, this::greets);
    }

    /** True once the server sends its protocol-10 handshake (an unready server sends an error packet instead). */
    private boolean greets() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port()), 200);
            s.setSoTimeout(1000);
            InputStream in = s.getInputStream();
            byte[] header = in.readNBytes(5);
            return header.length == 5 && header[4] == 10;
        } catch (IOException e) {
            return false;
        }
    }
}
