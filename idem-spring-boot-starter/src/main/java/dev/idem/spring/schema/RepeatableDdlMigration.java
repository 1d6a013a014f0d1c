package dev.idem.spring.schema;

import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.Schema;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.util.List;
import java.util.zip.CRC32;
import org.flywaydb.core.api.MigrationVersion;
import org.flywaydb.core.api.migration.Context;
import org.flywaydb.core.api.migration.JavaMigration;
import org.jspecify.annotations.Nullable;

/**
 * Tables Idem ships as a Flyway <em>repeatable</em> migration: it never collides with the application's own version
 * numbers, runs after them, and again only when the DDL changes (the checksum covers the statements of every dialect
 * the DDL is written for; every statement creates only what is missing).
 */
public abstract class RepeatableDdlMigration implements JavaMigration {
    private final String description;
    private final List<Dialect> dialects;

    protected RepeatableDdlMigration(String description, List<Dialect> dialects) {
        this.description = description;
        this.dialects = List.copyOf(dialects);
    }

    /** The statements that create what is missing, in {@code dialect}. */
    protected abstract List<String> ddl(Dialect dialect);

    @Override
    public final @Nullable MigrationVersion getVersion() {
        return null;
    }

    @Override
    public final String getDescription() {
        return description;
    }

    /** A checksum over the statements of every dialect: it changes when the schema does. */
    @Override
    public final Integer getChecksum() {
        CRC32 crc = new CRC32();
        for (Dialect dialect : dialects) {
            ddl(dialect).forEach(sql -> crc.update(sql.getBytes(StandardCharsets.UTF_8)));
        }
        return (int) crc.getValue();
    }

    @Override
    public final boolean canExecuteInTransaction() {
        return true;
    }

    @Override
    public final void migrate(Context context) throws Exception {
        Connection connection = context.getConnection();
        Dialect dialect = Schema.detect(connection);
        Schema.executeMissing(connection, dialect, ddl(dialect));
    }
}
