package dev.idem.spring.schema;

import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.Schema;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.util.zip.CRC32;
import org.flywaydb.core.api.MigrationVersion;
import org.flywaydb.core.api.migration.Context;
import org.flywaydb.core.api.migration.JavaMigration;
import org.jspecify.annotations.Nullable;

/**
 * Idem's tables as a Flyway <em>repeatable</em> migration ({@link Schema#ddl}: the DDL idem-jdbc ships). Repeatable, so
 * it never collides with the application's own version numbers; it runs after them, and again only when Idem's DDL
 * changes (every statement creates only what is missing). The starter declares it as a bean, which Spring Boot's
 * Flyway picks up.
 */
public final class IdemFlywayMigration implements JavaMigration {
    private final String table;

    public IdemFlywayMigration(String table) {
        this.table = table;
    }

    @Override
    public @Nullable MigrationVersion getVersion() {
        return null;
    }

    @Override
    public String getDescription() {
        return "idem " + table;
    }

    /** A checksum over the statements of every dialect: it changes when Idem's schema does. */
    @Override
    public Integer getChecksum() {
        CRC32 crc = new CRC32();
        for (Dialect dialect : Dialect.values()) {
            Schema.ddl(dialect, table).forEach(sql -> crc.update(sql.getBytes(StandardCharsets.UTF_8)));
        }
        return (int) crc.getValue();
    }

    @Override
    public boolean canExecuteInTransaction() {
        return true;
    }

    @Override
    public void migrate(Context context) throws Exception {
        Connection connection = context.getConnection();
        try (Statement statement = connection.createStatement()) {
            for (String sql : Schema.ddl(Schema.detect(connection), table)) {
                statement.execute(sql);
            }
        }
    }
}
