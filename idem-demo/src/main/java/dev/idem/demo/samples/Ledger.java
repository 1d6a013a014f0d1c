package dev.idem.demo.samples;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * The samples' effect: a call to the payment provider (a few milliseconds) and one row in the lab's ledger per
 * payment applied.
 */
final class Ledger {
    static final long PROVIDER_CALL_MILLIS = 15;

    private final HikariDataSource dataSource;

    Ledger(String jdbcUrl) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl);
        config.setMaximumPoolSize(3);
        config.setConnectionTimeout(10_000);
        config.setPoolName("sample");
        this.dataSource = new HikariDataSource(config);
    }

    DataSource dataSource() {
        return dataSource;
    }

    /** Calls the provider, then writes the ledger row on {@code c}. */
    static void apply(Connection c, Payment p) throws SQLException, InterruptedException {
        Thread.sleep(PROVIDER_CALL_MILLIS);
        try (PreparedStatement ps =
                c.prepareStatement("INSERT INTO idem_lab_ledger (payment_id, account, amount) VALUES (?, ?, ?)")) {
            ps.setString(1, p.id());
            ps.setString(2, p.account());
            ps.setLong(3, p.amount());
            ps.executeUpdate();
        }
    }

    /** Applies {@code p} in a transaction of its own. */
    void apply(Payment p) throws SQLException, InterruptedException {
        try (Connection c = dataSource.getConnection()) {
            apply(c, p);
        }
    }

    boolean applied(Payment p) throws SQLException {
        try (Connection c = dataSource.getConnection();
                PreparedStatement ps =
                        c.prepareStatement("SELECT COUNT(*) FROM idem_lab_ledger WHERE payment_id = ?")) {
            ps.setString(1, p.id());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1) > 0;
            }
        }
    }
}
