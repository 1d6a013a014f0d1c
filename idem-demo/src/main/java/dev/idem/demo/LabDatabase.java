package dev.idem.demo;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.Outcome;
import dev.idem.jdbc.OwnTransaction;
import dev.idem.jdbc.TransactionalHandler;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Locale;
import javax.sql.DataSource;

/**
 * The lab's database: the business schema of every strategy (tables {@code lab_<strategy>_*}, dropped and created
 * at the start of each run), the expected outcome of every order ({@code lab_expected}), and transactions.
 */
final class LabDatabase implements AutoCloseable {
    private final HikariDataSource dataSource;

    private final String rawUrl;
    private final String url;
    private final String product;

    private LabDatabase(HikariDataSource dataSource, String rawUrl, String product) {
        this.dataSource = dataSource;
        this.rawUrl = rawUrl;
        this.url = redact(rawUrl);
        this.product = product;
    }

    /** Connects, or throws {@link LabOptions.BadOptionException} saying why and what to do. */
    static LabDatabase connect(String url, int poolSize) {
        String jdbcUrl = url;
        if (url.toLowerCase(Locale.ROOT).startsWith("jdbc:mysql:") && !url.contains("permitMysqlScheme")) {
            // The MariaDB driver speaks to MySQL too, and takes jdbc:mysql: URLs when told so.
            jdbcUrl = url + (url.contains("?") ? "&" : "?") + "permitMysqlScheme";
        }
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl);
        config.setMaximumPoolSize(poolSize);
        config.setPoolName("idem-lab");
        config.setConnectionTimeout(10_000);
        config.setInitializationFailTimeout(5_000);
        HikariDataSource ds;
        try {
            ds = new HikariDataSource(config);
        } catch (RuntimeException e) {
            throw new LabOptions.BadOptionException("cannot connect to the database at " + redact(url) + " ("
                    + rootMessage(e) + "): start it or fix --jdbc-url, or leave --jdbc-url out to use the embedded H2");
        }
        try (Connection c = ds.getConnection()) {
            String product = c.getMetaData().getDatabaseProductName() + " "
                    + c.getMetaData().getDatabaseProductVersion();
            return new LabDatabase(ds, url, product);
        } catch (SQLException e) {
            ds.close();
            throw new LabOptions.BadOptionException(
                    "cannot use the database at " + redact(url) + " (" + rootMessage(e) + "): fix --jdbc-url");
        }
    }

    DataSource dataSource() {
        return dataSource;
    }

    /** The URL, password redacted, for printing. */
    String url() {
        return url;
    }

    /** The URL as given, password included: for the consumers the lab starts. */
    String rawUrl() {
        return rawUrl;
    }

    String product() {
        return product;
    }

    void dropTable(String table) throws SQLException {
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement()) {
            s.execute("DROP TABLE IF EXISTS " + table);
        }
    }

    /** Drops and creates the expected-outcome table and the business tables of each strategy. */
    void createSchema(List<String> prefixes) throws SQLException {
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement()) {
            s.execute("DROP TABLE IF EXISTS lab_expected");
            s.execute("CREATE TABLE lab_expected (order_id BIGINT PRIMARY KEY, customer_id BIGINT NOT NULL,"
                    + " amount BIGINT NOT NULL, final_status VARCHAR(16) NOT NULL, paid INT NOT NULL)");
            for (String p : prefixes) {
                for (String t : List.of("orders", "accounts", "ledger")) {
                    s.execute("DROP TABLE IF EXISTS " + p + "_" + t);
                }
                s.execute("CREATE TABLE " + p + "_orders (id BIGINT PRIMARY KEY, customer_id BIGINT NOT NULL,"
                        + " amount BIGINT NOT NULL, status VARCHAR(16) NOT NULL, version BIGINT NOT NULL)");
                s.execute("CREATE TABLE " + p + "_accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL)");
                s.execute("CREATE TABLE " + p + "_ledger (order_id BIGINT NOT NULL, customer_id BIGINT NOT NULL,"
                        + " amount BIGINT NOT NULL, message_key VARCHAR(64) NOT NULL)");
                s.execute("CREATE INDEX " + p + "_ledger_order ON " + p + "_ledger (order_id)");
            }
        }
    }

    /** Fills {@code lab_expected} and opens an account with balance 0 per customer in each strategy's tables. */
    void load(OrderFlow flow, List<String> prefixes) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO lab_expected"
                    + " (order_id, customer_id, amount, final_status, paid) VALUES (?, ?, ?, ?, ?)")) {
                int n = 0;
                for (OrderFlow.Order o : flow.orders()) {
                    ps.setLong(1, o.id());
                    ps.setLong(2, o.customerId());
                    ps.setLong(3, o.amount());
                    ps.setString(4, o.finalStatus());
                    ps.setInt(5, o.cancelled() ? 0 : 1);
                    ps.addBatch();
                    if (++n % 500 == 0) {
                        ps.executeBatch();
                    }
                }
                ps.executeBatch();
            }
            for (String p : prefixes) {
                try (PreparedStatement ps =
                        c.prepareStatement("INSERT INTO " + p + "_accounts (id, balance) VALUES (?, 0)")) {
                    for (long id = 1; id <= flow.customers(); id++) {
                        ps.setLong(1, id);
                        ps.addBatch();
                    }
                    ps.executeBatch();
                }
            }
            c.commit();
        }
    }

    /** Runs {@code work} in a transaction: commit when its outcome is final, roll back otherwise or on error. */
    Outcome inTransaction(TransactionalHandler work) {
        return OwnTransaction.of(dataSource).run(work);
    }

    long queryLong(String sql) throws SQLException {
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        String m = t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
        return m.replaceAll("\\s+", " ").trim();
    }

    /** The URL without a password, for printing. */
    static String redact(String url) {
        return url.replaceAll("(?i)(password=)[^&;]*", "$1***").replaceAll("(//[^:/@]+:)[^@/]*@", "$1***@");
    }

    @Override
    public void close() {
        dataSource.close();
    }
}
