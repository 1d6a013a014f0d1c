package dev.idem.spring.schema;

import dev.idem.ConfigurationException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;
import java.util.zip.CRC32;

/**
 * The DDL that idem-jdbc ships ({@code /dev/idem/jdbc/ddl/*.sql}, the same files {@code createTableIfMissing} runs),
 * split into statements for one database, for the Flyway and Liquibase migrations. MySQL skips the sequence (it has
 * none; lease mode is not offered there), as idem-jdbc does.
 */
public final class IdemDdl {
    private static final String DEFAULT_TABLE = "idem_keys";
    private static final Pattern TABLE = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,47}");
    private static final List<String> FILES = List.of("postgresql.sql", "mysql.sql", "h2.sql");

    private IdemDdl() {}

    /** The database a connection talks to, by the names Liquibase uses: postgresql, mariadb, mysql or h2. */
    public static String databaseOf(Connection connection) throws SQLException {
        DatabaseMetaData meta = connection.getMetaData();
        String product = meta.getDatabaseProductName().toLowerCase(Locale.ROOT);
        String version = meta.getDatabaseProductVersion().toLowerCase(Locale.ROOT);
        if (product.contains("postgres")) {
            return "postgresql";
        }
        if (product.contains("mariadb") || (product.contains("mysql") && version.contains("mariadb"))) {
            return "mariadb";
        }
        if (product.contains("mysql")) {
            return "mysql";
        }
        if (product.equals("h2")) {
            return "h2";
        }
        throw new ConfigurationException("database '" + meta.getDatabaseProductName() + "' is not supported by Idem's"
                + " migration: it covers PostgreSQL, MariaDB, MySQL and H2");
    }

    /**
     * The statements creating Idem's tables on {@code database} (postgresql, mariadb, mysql, h2), the keys table
     * named {@code table}; each creates only what is missing.
     */
    public static List<String> statements(String database, String table) {
        if (!TABLE.matcher(table).matches()) {
            throw new ConfigurationException("table name '" + table + "' is not allowed: use 1 to 48 characters of"
                    + " [A-Za-z0-9_] starting with a letter or underscore");
        }
        String file = switch (database) {
            case "postgresql" -> "postgresql.sql";
            case "mariadb", "mysql" -> "mysql.sql";
            case "h2" -> "h2.sql";
            default ->
                throw new ConfigurationException("database '" + database + "' is not supported by Idem's"
                        + " migration: it covers postgresql, mariadb, mysql and h2");
        };
        Pattern name = Pattern.compile("\\b" + DEFAULT_TABLE);
        List<String> statements = new ArrayList<>();
        for (String part : read(file).replaceAll("(?m)--.*$", "").split(";")) {
            String sql = part.strip();
            if (sql.isEmpty()
                    || (database.equals("mysql") && sql.toUpperCase(Locale.ROOT).startsWith("CREATE SEQUENCE"))) {
                continue;
            }
            statements.add(name.matcher(sql).replaceAll(table));
        }
        return statements;
    }

    /** A checksum over every shipped DDL file: it changes when Idem's schema does. */
    public static int checksum() {
        CRC32 crc = new CRC32();
        FILES.forEach(f -> crc.update(read(f).getBytes(StandardCharsets.UTF_8)));
        return (int) crc.getValue();
    }

    private static String read(String file) {
        String resource = "/dev/idem/jdbc/ddl/" + file;
        try (InputStream in = IdemDdl.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("missing resource " + resource + ": is idem-jdbc on the classpath?");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
