package dev.idem.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The private servers, each engine with its real client: what survives a restart and a kill, and what close leaves. */
@Timeout(120)
class PrivateServerTest {

    private static PrivateServer start(String engine) {
        return switch (engine) {
            case "postgres" -> PrivateServer.postgres();
            case "mariadb" -> PrivateServer.mariadb();
            default -> throw new IllegalArgumentException(engine);
        };
    }

    /** One server per engine for the whole story: creating a database server takes a second or two. */
    @ParameterizedTest
    @ValueSource(strings = {"postgres", "mariadb"})
    void database_rollsBackOpenTransactions_onRestart_keepsCommittedRows_acrossRestartAndKill_andCloseRemovesIt(
            String engine) throws Exception {
        PrivateServer server = start(engine);
        int port = server.port();
        assertThat(port).isNotIn(5432, 3306);
        sql(server, "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)");
        try (Connection open = DriverManager.getConnection(server.url())) {
            open.setAutoCommit(false);
            open.createStatement().executeUpdate("INSERT INTO t VALUES (2)");

            server.restart();

            assertThatThrownBy(open::commit).isInstanceOf(SQLException.class);
        }
        assertThat(count(server, "SELECT COUNT(*) FROM t")).isEqualTo(1);
        sql(server, "INSERT INTO t VALUES (3)");

        server.kill();

        assertThat(server.isRunning()).isFalse();
        assertThatThrownBy(() -> sql(server, "SELECT 1")).isInstanceOf(SQLException.class);
        server.start();
        assertThat(count(server, "SELECT COUNT(*) FROM t")).isEqualTo(2);
        assertThat(server.port()).isEqualTo(port);

        List<ProcessHandle> processes = server.processes();
        server.kill();
        server.close();
        server.close();

        assertThat(processes).isNotEmpty().allMatch(PrivateServer::isDead);
        assertThat(server.directory()).doesNotExist();
        assertThat(TestServers.answers("127.0.0.1", port)).isFalse();
        assertThatThrownBy(server::start)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }

    @Test
    void mariadb_keepsItsTemporaryFiles_inItsOwnDirectory_soThatInstallsAtOnceDoNotAbort() throws Exception {
        try (PrivateServer mariadb = PrivateServer.mariadb();
                Connection c = DriverManager.getConnection(mariadb.url());
                ResultSet rs = c.createStatement().executeQuery("SELECT @@tmpdir")) {
            rs.next();
            assertThat(Path.of(rs.getString(1))).startsWith(mariadb.directory());
        }
    }

    @Test
    void aFailedStart_reportsTheLogsErrorLines_evenWhenAdviceFillsTheTail() throws IOException {
        Path log = Files.createTempFile("install", ".log");
        try {
            List<String> lines = new ArrayList<>(List.of("Installing system tables", "ERROR: 1051  Unknown table"));
            for (int i = 0; i < 20; i++) {
                lines.add("advice " + i);
            }
            Files.write(log, lines);

            assertThat(PrivateServer.excerpt(log).lines())
                    .startsWith("ERROR: 1051  Unknown table", "...", "advice 5")
                    .endsWith("advice 19")
                    .hasSize(17);
        } finally {
            Files.delete(log);
        }
    }

    @Test
    void redis_losesEveryKey_onRestart_likeTheMachinesRedis() throws Exception {
        try (PrivateServer redis = PrivateServer.redis()) {
            assertThat(redis.url()).isEqualTo("redis://127.0.0.1:" + redis.port());
            assertThat(resp(redis, "SET k v")).isEqualTo("+OK");
            assertThat(resp(redis, "GET k")).isEqualTo("$1");

            redis.restart();

            assertThat(resp(redis, "GET k")).isEqualTo("$-1");
            List<ProcessHandle> processes = redis.processes();
            redis.kill();
            // The process, not the port: another test JVM may take a freed port at once.
            assertThat(processes).isNotEmpty().allMatch(PrivateServer::isDead);
        }
    }

    @Test
    void redis_close_stopsItsProcess_andDeletesTheDirectory() {
        PrivateServer redis = PrivateServer.redis();
        List<ProcessHandle> processes = redis.processes();

        redis.close();

        assertThat(processes).isNotEmpty().allMatch(PrivateServer::isDead);
        assertThat(redis.directory()).doesNotExist();
    }

    @Test
    void newServer_removesTheServerOfAJvmThatDied_withoutItsExitHook() throws Exception {
        Process deadJvm = new ProcessBuilder("true").start();
        deadJvm.waitFor(10, TimeUnit.SECONDS);
        Process orphan = new ProcessBuilder("sleep", "300").start();
        Path dir = Files.createTempDirectory(PrivateServer.DIRECTORY_PREFIX + "redis-");
        Files.writeString(dir.resolve("owner"), deadJvm.pid() + " " + Instant.EPOCH);
        Files.writeString(
                dir.resolve("server.pid"),
                orphan.pid() + " " + orphan.info().startInstant().orElseThrow());

        try (PrivateServer fresh = PrivateServer.redis()) {
            assertThat(orphan.waitFor(10, TimeUnit.SECONDS)).isTrue();
            assertThat(dir).doesNotExist();
            assertThat(fresh.directory()).exists();
        } finally {
            orphan.destroyForcibly();
        }
    }

    @Test
    void newServer_leavesTheServersOfLivingJvmsAlone() throws Exception {
        try (PrivateServer first = PrivateServer.redis();
                PrivateServer second = PrivateServer.redis()) {
            assertThat(first.directory()).exists();
            assertThat(resp(first, "PING")).isEqualTo("+PONG");
            assertThat(second.port()).isNotEqualTo(first.port());
        }
    }

    private static void sql(PrivateServer server, String... statements) throws SQLException {
        try (Connection c = DriverManager.getConnection(server.url());
                Statement s = c.createStatement()) {
            for (String statement : statements) {
                s.execute(statement);
            }
        }
    }

    private static long count(PrivateServer server, String query) throws SQLException {
        try (Connection c = DriverManager.getConnection(server.url());
                ResultSet rs = c.createStatement().executeQuery(query)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** Sends one inline RESP command and returns the first line of the answer. */
    private static String resp(PrivateServer redis, String command) throws IOException {
        try (Socket s = new Socket("127.0.0.1", redis.port())) {
            s.setSoTimeout(5000);
            OutputStream out = s.getOutputStream();
            out.write((command + "\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            StringBuilder line = new StringBuilder();
            for (int b = in.read(); b != '\r' && b != -1; b = in.read()) {
                line.append((char) b);
            }
            return line.toString();
        }
    }
}
