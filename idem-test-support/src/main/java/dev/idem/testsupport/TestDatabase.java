package dev.idem.testsupport;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * A database of its own for one test class: a fresh schema on PostgreSQL, a fresh database on MariaDB/MySQL, a
 * fresh in-memory database on H2. Dropped on {@link #close()}. The JDBC driver must be on the test classpath.
 *
 * <pre>{@code
 * static TestDatabase db;
 * @BeforeAll static void start() { db = TestDatabase.postgres("JdbcStoreTest"); }
 * @AfterAll static void stop() { db.close(); }
 * }</pre>
 */
public final class TestDatabase implements AutoCloseable {
    /** The engines the fixture knows. */
    public enum Engine {
        POSTGRESQL,
        MARIADB,
        H2
    }

    private static final Pattern JDBC_URL = Pattern.compile("(jdbc:[a-z0-9]+://[^/?]+)/([^?]*)(\\?.*)?");

    private final Engine engine;
    private final String name;
    private final String url;
    private final String adminUrl;
    private final HikariDataSource dataSource;

    private TestDatabase(Engine engine, String name, String url, String adminUrl, int poolSize) {
        this.engine = engine;
        this.name = name;
        this.url = url;
        this.adminUrl = adminUrl;
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setMaximumPoolSize(poolSize);
        config.setMinimumIdle(1); // open the rest on demand: the servers are shared, and idle pools filled them up
        config.setPoolName("idem-test-" + name);
        config.setConnectionTimeout(10_000);
        this.dataSource = new HikariDataSource(config);
    }

    /** A fresh schema on the PostgreSQL server found by {@link TestServers#postgres()}. */
    public static TestDatabase postgres(String testName) {
        return postgres(TestServers.postgres(), testName);
    }

    /** A fresh schema on {@code postgres}, e.g. the {@link PrivateServer#server()} of a test's own server. */
    public static TestDatabase postgres(TestServers.Server postgres, String testName) {
        String server = postgres.url();
        String schema = TestServers.uniquePrefix(testName);
        execute(server, "CREATE SCHEMA " + schema);
        String url = server + (server.contains("?") ? "&" : "?") + "currentSchema=" + schema;
        return new TestDatabase(Engine.POSTGRESQL, schema, url, server, 16);
    }

    /** A fresh database on the MariaDB/MySQL server found by {@link TestServers#mysql()}. */
    public static TestDatabase mariadb(String testName) {
        return mariadb(TestServers.mysql(), testName);
    }

    /** A fresh database on {@code mariadb}, e.g. the {@link PrivateServer#server()} of a test's own server. */
    public static TestDatabase mariadb(TestServers.Server mariadb, String testName) {
        String server = mariadb.url();
        String database = TestServers.uniquePrefix(testName);
        execute(server, "CREATE DATABASE " + database + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin");
        Matcher m = JDBC_URL.matcher(server);
        if (!m.matches()) {
            throw new IllegalArgumentException(
                    "IDEM_MYSQL_URL must look like jdbc:mariadb://host:port/db?user=...," + " got " + server);
        }
        String url = m.group(1) + "/" + database + (m.group(3) == null ? "" : m.group(3));
        return new TestDatabase(Engine.MARIADB, database, url, server, 16);
    }

    /** A fresh in-memory H2 database, kept until {@link #close()}. */
    public static TestDatabase h2(String testName) {
        String database = TestServers.uniquePrefix(testName);
        String url = "jdbc:h2:mem:" + database + ";DB_CLOSE_DELAY=-1;LOCK_TIMEOUT=10000";
        return new TestDatabase(Engine.H2, database, url, url, 16);
    }

    public Engine engine() {
        return engine;
    }

    /** The schema or database name. */
    public String name() {
        return name;
    }

    /** A JDBC URL (with credentials) that opens this database. */
    public String url() {
        return url;
    }

    /** A pooled data source on this database (16 connections). */
    public DataSource dataSource() {
        return dataSource;
    }

    /**
     * A pool of one connection on this database, handed out in auto-commit or not, whose round trips {@link
     * CountingSocketFactory} counts (every call reuses the same connection). The caller closes it.
     */
    public HikariDataSource countedPool(boolean autoCommit) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(CountingSocketFactory.urlWithCounting(url));
        config.setMaximumPoolSize(1);
        config.setAutoCommit(autoCommit);
        return new HikariDataSource(config);
    }

    /** Opens a connection from the pool. */
    public Connection connection() throws SQLException {
        return dataSource.getConnection();
    }

    /** Runs one statement on this database, outside any transaction of the caller. */
    public void execute(String sql) {
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException("test database " + name + ": " + sql + " failed: " + e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        dataSource.close();
        switch (engine) {
            case POSTGRESQL -> execute(adminUrl, "DROP SCHEMA IF EXISTS " + name + " CASCADE");
            case MARIADB -> execute(adminUrl, "DROP DATABASE IF EXISTS " + name);
            case H2 -> execute(adminUrl, "SHUTDOWN");
        }
    }

    private static void execute(String url, String sql) {
        try (Connection c = DriverManager.getConnection(url);
                Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(sql + " on " + url + " failed: " + e.getMessage(), e);
        }
    }
}
