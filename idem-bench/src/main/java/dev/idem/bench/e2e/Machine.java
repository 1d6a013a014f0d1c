package dev.idem.bench.e2e;

import dev.idem.testsupport.TestDatabase.Engine;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.sql.DataSource;

/** Facts about the machine and the servers, read from them, for the report. */
final class Machine {
    private Machine() {}

    static String cpu() {
        String model = "";
        try {
            model = Files.readAllLines(Path.of("/proc/cpuinfo")).stream()
                    .filter(l -> l.startsWith("model name"))
                    .map(l -> l.substring(l.indexOf(':') + 1).strip())
                    .findFirst()
                    .orElse("");
        } catch (IOException | RuntimeException e) {
            // not Linux: the count is enough
        }
        return Runtime.getRuntime().availableProcessors() + " CPUs" + (model.isEmpty() ? "" : " (" + model + ")");
    }

    static String jdk() {
        return System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version") + ", "
                + System.getProperty("os.name") + " " + System.getProperty("os.version") + ", max heap "
                + Runtime.getRuntime().maxMemory() / (1024 * 1024) + " MiB";
    }

    static String loadAverage() {
        double load = ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
        return load < 0 ? "n/a" : String.format(Locale.ROOT, "%.2f", load);
    }

    /** Version and durability settings, as the server reports them. */
    static String database(Engine engine, DataSource dataSource) {
        List<String> facts = new ArrayList<>();
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement()) {
            switch (engine) {
                case POSTGRESQL -> {
                    facts.add(value(s, "SELECT version()"));
                    for (String setting : List.of(
                            "fsync", "synchronous_commit", "wal_sync_method", "full_page_writes", "shared_buffers")) {
                        facts.add(setting + "=" + value(s, "SHOW " + setting));
                    }
                }
                case MARIADB -> {
                    facts.add("MariaDB/MySQL " + value(s, "SELECT VERSION()"));
                    for (String setting : List.of(
                            "innodb_flush_log_at_trx_commit",
                            "sync_binlog",
                            "log_bin",
                            "innodb_flush_method",
                            "innodb_buffer_pool_size",
                            "tx_isolation")) {
                        facts.add(setting + "=" + value(s, "SELECT @@" + setting));
                    }
                }
                case H2 -> facts.add("H2 " + c.getMetaData().getDatabaseProductVersion() + " (in memory)");
            }
        } catch (SQLException e) {
            facts.add("(could not read: " + e.getMessage() + ")");
        }
        return String.join(", ", facts);
    }

    static String redis(String uri) {
        RedisClient client = RedisClient.create(uri);
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            String info = c.sync().info("server");
            String version = info.lines()
                    .filter(l -> l.startsWith("redis_version:"))
                    .map(l -> l.substring("redis_version:".length()))
                    .findFirst()
                    .orElse("?");
            Map<String, String> aof = c.sync().configGet("appendonly", "appendfsync", "save");
            return "Redis " + version + ", appendonly=" + aof.get("appendonly") + ", appendfsync="
                    + aof.get("appendfsync") + ", save='" + aof.get("save") + "'";
        } catch (RuntimeException e) {
            return "Redis (could not read: " + e.getMessage() + ")";
        } finally {
            client.shutdown();
        }
    }

    private static String value(Statement s, String sql) throws SQLException {
        try (ResultSet rs = s.executeQuery(sql)) {
            return rs.next() ? String.valueOf(rs.getString(1)) : "?";
        }
    }
}
