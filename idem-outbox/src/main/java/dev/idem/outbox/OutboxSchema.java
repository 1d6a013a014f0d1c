package dev.idem.outbox;

import dev.idem.ConfigurationException;
import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.Schema;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * The shipped DDL of the outbox table and its shard table ({@code /dev/idem/outbox/ddl/*.sql}), for schema migrations
 * and for {@link #create}.
 */
public final class OutboxSchema {
    static final String DEFAULT_TABLE = "idem_outbox";

    /** 1 to 40 characters: room for the {@code _message_id_key} and {@code _shards} suffixes in 63. */
    private static final Pattern TABLE_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,39}");

    private OutboxSchema() {}

    static String validateTable(String table) {
        if (table == null || !TABLE_NAME.matcher(table).matches()) {
            throw new ConfigurationException("outbox table name '" + table + "' is not allowed: use 1 to 40 characters"
                    + " of [A-Za-z0-9_] starting with a letter or underscore, e.g. 'idem_outbox'");
        }
        return table;
    }

    /** The statements that create the outbox table {@code table}, its indexes and {@code <table>_shards}. */
    public static List<String> ddl(Dialect dialect, String table) {
        validateTable(table);
        if (dialect == Dialect.MYSQL) {
            throw new ConfigurationException(
                    "the outbox ships DDL for PostgreSQL, MariaDB and H2; MySQL is not tested");
        }
        String file = switch (dialect) {
            case POSTGRESQL -> "postgresql.sql";
            case MARIADB, MYSQL -> "mysql.sql";
            case H2 -> "h2.sql";
        };
        String text;
        try (InputStream in = OutboxSchema.class.getResourceAsStream("/dev/idem/outbox/ddl/" + file)) {
            if (in == null) {
                throw new IllegalStateException("missing resource /dev/idem/outbox/ddl/" + file);
            }
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Pattern name = Pattern.compile("\\b" + DEFAULT_TABLE);
        List<String> statements = new ArrayList<>();
        for (String part : text.replaceAll("(?m)--.*$", "").split(";")) {
            String sql = part.strip();
            if (!sql.isEmpty()) {
                statements.add(name.matcher(sql).replaceAll(table));
            }
        }
        return statements;
    }

    /** Creates the outbox table {@code table} and its shard table on {@code dataSource}, unless they exist. */
    public static void create(DataSource dataSource, String table) {
        String store = "outbox " + table;
        Dialect dialect = Schema.detect(dataSource, store);
        Schema.createMissing(dataSource, dialect, ddl(dialect, table), store);
    }

    /** {@link #create(DataSource, String)} for the default table {@code idem_outbox}. */
    public static void create(DataSource dataSource) {
        create(dataSource, DEFAULT_TABLE);
    }
}
