package dev.idem.spring.schema;

import java.sql.Connection;
import java.sql.Statement;
import org.flywaydb.core.api.MigrationVersion;
import org.flywaydb.core.api.migration.Context;
import org.flywaydb.core.api.migration.JavaMigration;
import org.jspecify.annotations.Nullable;

/**
 * Idem's tables as a Flyway <em>repeatable</em> migration ({@link IdemDdl}: the DDL idem-jdbc ships). Repeatable, so
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

    @Override
    public Integer getChecksum() {
        return IdemDdl.checksum();
    }

    @Override
    public boolean canExecuteInTransaction() {
        return true;
    }

    @Override
    public void migrate(Context context) throws Exception {
        Connection connection = context.getConnection();
        try (Statement statement = connection.createStatement()) {
            for (String sql : IdemDdl.statements(IdemDdl.databaseOf(connection), table)) {
                statement.execute(sql);
            }
        }
    }
}
