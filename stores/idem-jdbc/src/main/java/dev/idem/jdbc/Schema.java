package dev.idem.jdbc;

import dev.idem.ConfigurationException;
import dev.idem.StoreUnavailableException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Table names, dialect detection and the shipped DDL ({@code /dev/idem/jdbc/ddl/*.sql}). Public for schema
 * migrations (the Spring Boot starter's Flyway and Liquibase changes): {@link #ddl(Dialect, String)} and {@link
 * #detect(Connection)}.
 */
public final class Schema {
    private Schema() {}

    static final String DEFAULT_TABLE = "idem_keys";
    static final String DEFAULT_NODE_ID_TABLE = "idem_node_ids";

    /**
     * A plain SQL identifier that no database quotes or folds differently: a letter or underscore, then up to 47
     * letters, digits or underscores (48 leaves room for the {@code _expires_idx} and {@code _fencing} suffixes
     * within PostgreSQL's 63-character limit).
     */
    static final Pattern TABLE_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,47}");

    static String validateTable(String table) {
        if (table == null || !TABLE_NAME.matcher(table).matches()) {
            throw new ConfigurationException("table name '" + table + "' is not allowed: use 1 to 48 characters of"
                    + " [A-Za-z0-9_] starting with a letter or underscore, e.g. 'idem_keys' (set the schema on the"
                    + " connection, not in the name)");
        }
        return table;
    }

    static String ddlResource(Dialect dialect) {
        String file = switch (dialect) {
            case POSTGRESQL -> "postgresql.sql";
            case MARIADB, MYSQL -> "mysql.sql";
            case H2 -> "h2.sql";
        };
        return "/dev/idem/jdbc/ddl/" + file;
    }

    /**
     * The dialect of the database {@code dataSource} connects to.
     *
     * @throws StoreUnavailableException naming {@code store} when no connection opens
     */
    public static Dialect detect(DataSource dataSource, String store) {
        try (Connection c = dataSource.getConnection()) {
            return detect(c);
        } catch (SQLException e) {
            throw new StoreUnavailableException(
                    store, "could not open a connection to detect the database (" + e.getMessage() + ")", e);
        }
    }

    /** The dialect of the database {@code c} talks to. */
    public static Dialect detect(Connection c) throws SQLException {
        String product = c.getMetaData().getDatabaseProductName();
        String version = c.getMetaData().getDatabaseProductVersion();
        String p = product.toLowerCase(Locale.ROOT);
        if (p.contains("postgres")) {
            return Dialect.POSTGRESQL;
        }
        if (p.contains("mariadb")
                || (p.contains("mysql") && version.toLowerCase(Locale.ROOT).contains("mariadb"))) {
            return Dialect.MARIADB;
        }
        if (p.contains("mysql")) {
            return Dialect.MYSQL;
        }
        if (p.equals("h2")) {
            return Dialect.H2;
        }
        throw new ConfigurationException(
                "database '" + product + "' is not supported: Idem's JDBC stores run on"
                        + " PostgreSQL, MariaDB, MySQL and H2; if this database speaks one of their dialects, set .dialect(...)");
    }

    private static final Pattern IDENTIFIER =
            Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}(\\.[A-Za-z_][A-Za-z0-9_]{0,62})?");

    /**
     * Checks a business table or column name from configuration: letters, digits and underscores, optionally
     * qualified by a schema, so that no SQL can be injected through it.
     */
    static String identifier(String what, String name) {
        if (name == null || !IDENTIFIER.matcher(name).matches()) {
            throw new ConfigurationException(what + " '" + name + "' is not a valid SQL identifier: use letters,"
                    + " digits and underscores (optionally schema.name), at most 63 characters each");
        }
        return name;
    }

    /**
     * The DDL statements of the shipped resource that name {@code defaultTable} (the keys table with its index and
     * sequence, or the node-id table), renamed for {@code table}.
     */
    static List<String> ddl(Dialect dialect, String defaultTable, String table) {
        Pattern name = Pattern.compile("\\b" + defaultTable);
        List<String> statements = new ArrayList<>();
        for (String sql : statements(dialect)) {
            if (name.matcher(sql).find()) {
                statements.add(name.matcher(sql).replaceAll(table));
            }
        }
        return statements;
    }

    /**
     * Every statement of the shipped DDL for {@code dialect}, the keys table (and its index and sequence) named
     * {@code table}; each creates only what is missing. MySQL has no sequence (no lease mode there): its statement is
     * left out.
     *
     * @throws ConfigurationException when {@code table} is not a plain identifier ({@link #validateTable})
     */
    public static List<String> ddl(Dialect dialect, String table) {
        validateTable(table);
        Pattern name = Pattern.compile("\\b" + DEFAULT_TABLE);
        List<String> statements = new ArrayList<>();
        for (String sql : statements(dialect)) {
            statements.add(name.matcher(sql).replaceAll(table));
        }
        return statements;
    }

    private static boolean isSequence(String sql) {
        return sql.toUpperCase(Locale.ROOT).startsWith("CREATE SEQUENCE");
    }

    /** The shipped statements of {@code dialect}; MySQL's leave out the sequence (it has none: no lease mode). */
    private static List<String> statements(Dialect dialect) {
        String text;
        try (InputStream in = Schema.class.getResourceAsStream(ddlResource(dialect))) {
            if (in == null) {
                throw new IllegalStateException("missing resource " + ddlResource(dialect));
            }
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<String> statements = new ArrayList<>();
        for (String part : text.replaceAll("(?m)--.*$", "").split(";")) {
            String sql = part.strip();
            if (!sql.isEmpty() && !(dialect == Dialect.MYSQL && isSequence(sql))) {
                statements.add(sql);
            }
        }
        return statements;
    }

    /** Creates the table, its index and (where lease mode needs one) its sequence, unless they exist. */
    static void create(DataSource dataSource, Dialect dialect, String table, String store) {
        create(dataSource, dialect, DEFAULT_TABLE, table, store);
    }

    /** Creates what is missing of the shipped statements of {@code defaultTable}, renamed for {@code table}. */
    static void create(DataSource dataSource, Dialect dialect, String defaultTable, String table, String store) {
        createMissing(dataSource, dialect, ddl(dialect, defaultTable, table), store);
    }

    /**
     * Runs each of {@code statements} (a shipped DDL: {@code CREATE TABLE|INDEX|SEQUENCE IF NOT EXISTS name …}) whose
     * object is missing ({@link #executeMissing}), in one transaction. Two processes starting at once on a fresh
     * database may both try to create an object ({@code IF NOT EXISTS} does not serialize them on PostgreSQL): the one
     * that loses sees the other's object and runs the statements again. Public for the outbox's tables.
     *
     * @throws StoreUnavailableException naming {@code store} when the database refuses
     */
    public static void createMissing(DataSource dataSource, Dialect dialect, List<String> statements, String store) {
        for (int attempt = 1; ; attempt++) {
            try (Connection c = dataSource.getConnection()) {
                runMissing(c, dialect, statements);
                return;
            } catch (SQLException e) {
                if (!createdMeanwhile(e) || attempt == DDL_ATTEMPTS) {
                    throw new StoreUnavailableException(store, "creating its tables failed: " + e.getMessage(), e);
                }
            }
        }
    }

    /** Each lost race leaves one more object created by the winner: the shipped DDL has fewer objects than this. */
    private static final int DDL_ATTEMPTS = 8;

    private static void runMissing(Connection c, Dialect dialect, List<String> statements) throws SQLException {
        try {
            executeMissing(c, dialect, statements);
            if (!c.getAutoCommit()) {
                c.commit();
            }
        } catch (SQLException e) {
            if (!c.getAutoCommit()) {
                c.rollback();
            }
            throw e;
        }
    }

    /** A shipped statement that creates one object unless it exists: its kind, its name and an index's table. */
    private static final Pattern CREATES = Pattern.compile(
            "CREATE\\s+(TABLE|INDEX|SEQUENCE)\\s+IF\\s+NOT\\s+EXISTS\\s+([A-Za-z_][A-Za-z0-9_]*)"
                    + "(?:\\s+ON\\s+([A-Za-z_][A-Za-z0-9_]*))?",
            Pattern.CASE_INSENSITIVE);

    /**
     * Executes each statement of a shipped DDL whose object does not exist where the statement would create it, looked
     * up in the catalog just before (a statement of another form always runs); commits nothing. Creating "if not
     * exists" is no such lookup: PostgreSQL's {@code CREATE INDEX IF NOT EXISTS} and MariaDB's {@code CREATE SEQUENCE
     * IF NOT EXISTS} wait for every open transaction that wrote the table or drew from the sequence, and every
     * statement on them after that waits behind the DDL: one long transaction would stall every consumer while another
     * one starts. Public for schema migrations, which run in a transaction of their own.
     */
    public static void executeMissing(Connection c, Dialect dialect, List<String> statements) throws SQLException {
        try (Statement s = c.createStatement()) {
            for (String sql : statements) {
                Matcher creates = CREATES.matcher(sql);
                if (!(creates.lookingAt() && exists(c, dialect, creates))) {
                    s.execute(sql);
                }
            }
        }
    }

    /**
     * Whether the object a statement creates exists: PostgreSQL creates in the first schema of the search path (an
     * index: in its table's schema), MariaDB/MySQL in the connection's database. H2 is not looked up.
     */
    private static boolean exists(Connection c, Dialect dialect, Matcher creates) throws SQLException {
        boolean index = creates.group(1).equalsIgnoreCase("INDEX");
        String table = creates.group(3);
        if (index && table == null) {
            return false;
        }
        @Nullable
        String query = switch (dialect) {
            case POSTGRESQL ->
                index
                        ? "SELECT count(*) FROM pg_class i WHERE i.relname = lower(?) AND i.relnamespace ="
                                + " (SELECT t.relnamespace FROM pg_class t WHERE t.oid = to_regclass(?))"
                        : "SELECT count(*) FROM pg_class r JOIN pg_namespace n ON n.oid = r.relnamespace"
                                + " WHERE r.relname = lower(?) AND n.nspname = current_schema()";
            case MARIADB, MYSQL ->
                index
                        ? "SELECT count(*) FROM information_schema.STATISTICS"
                                + " WHERE INDEX_NAME = ? AND TABLE_NAME = ? AND TABLE_SCHEMA = DATABASE()"
                        : "SELECT count(*) FROM information_schema.TABLES"
                                + " WHERE TABLE_NAME = ? AND TABLE_SCHEMA = DATABASE()";
            case H2 -> null; // H2's IF NOT EXISTS waits for nobody, and its catalog read beside DDL deadlocks
        };
        if (query == null) {
            return false;
        }
        try (PreparedStatement ps = c.prepareStatement(query)) {
            ps.setString(1, creates.group(2));
            if (index) {
                ps.setString(2, table);
            }
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getLong(1) > 0;
            }
        }
    }

    /** H2's error code (not its SQL state) for a general error. */
    private static final int H2_GENERAL_ERROR = 50000;

    /**
     * A unique violation in the catalog, or an object that already exists (H2 says so in a general error): a concurrent
     * creation won the race.
     */
    private static boolean createdMeanwhile(SQLException e) {
        String state = e.getSQLState();
        return "23505".equals(state)
                || "42P07".equals(state)
                || "42710".equals(state)
                || "42S01".equals(state)
                || (e.getErrorCode() == H2_GENERAL_ERROR
                        && String.valueOf(e.getMessage()).contains("already exists"));
    }
}
