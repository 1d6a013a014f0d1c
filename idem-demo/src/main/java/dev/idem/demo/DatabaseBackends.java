package dev.idem.demo;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * Ends the consumers' database sessions mid-run, as a failover or an administrator does: {@code
 * pg_terminate_backend} on PostgreSQL (the sessions opened with the {@code ApplicationName} the lab puts in {@code
 * {jdbcUrl}}), {@code KILL} on MariaDB/MySQL (every other session on the database of the URL: give the lab a
 * database of its own). Not available on H2.
 */
final class DatabaseBackends {
    private final LabDatabase db;
    private final String applicationName;
    private final Kind kind;

    private enum Kind {
        POSTGRESQL,
        MARIADB,
        OTHER
    }

    DatabaseBackends(LabDatabase db, String applicationName) {
        this.db = db;
        this.applicationName = applicationName;
        String product = db.product().toLowerCase(Locale.ROOT);
        this.kind = product.startsWith("postgresql")
                ? Kind.POSTGRESQL
                : product.startsWith("mariadb") || product.startsWith("mysql") ? Kind.MARIADB : Kind.OTHER;
    }

    /** Why the lab cannot end sessions on this database, or empty when it can. */
    Optional<String> unavailable() {
        return kind == Kind.OTHER
                ? Optional.of("ending sessions needs PostgreSQL or MariaDB/MySQL, not " + db.product())
                : Optional.empty();
    }

    /** The URL the consumers get as {@code {jdbcUrl}}: on PostgreSQL it names their sessions. */
    String consumerUrl(String url) {
        if (kind != Kind.POSTGRESQL) {
            return url;
        }
        return url + (url.contains("?") ? "&" : "?") + "ApplicationName=" + applicationName;
    }

    /** Ends the consumers' sessions; returns how many. */
    int terminate() throws SQLException {
        try (Connection c = db.dataSource().getConnection()) {
            if (kind == Kind.POSTGRESQL) {
                try (PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM (SELECT pg_terminate_backend(pid)"
                        + " AS t FROM pg_stat_activity WHERE application_name = ? AND pid <> pg_backend_pid()) x"
                        + " WHERE t")) {
                    ps.setString(1, applicationName);
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        return rs.getInt(1);
                    }
                }
            }
            if (kind == Kind.MARIADB) {
                List<Long> ids = new ArrayList<>();
                try (Statement s = c.createStatement();
                        ResultSet rs = s.executeQuery("SELECT ID FROM information_schema.PROCESSLIST"
                                + " WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND COMMAND NOT IN"
                                + " ('Daemon', 'Binlog Dump')")) {
                    while (rs.next()) {
                        ids.add(rs.getLong(1));
                    }
                }
                int killed = 0;
                for (long id : ids) {
                    try (Statement s = c.createStatement()) {
                        s.execute("KILL " + id);
                        killed++;
                    } catch (SQLException e) {
                        // the session ended by itself in between
                    }
                }
                return killed;
            }
            return 0;
        }
    }
}
