package dev.idem.spring.schema;

import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.Schema;
import java.util.List;

/**
 * Idem's tables as a Flyway <em>repeatable</em> migration ({@link Schema#ddl}: the DDL idem-jdbc ships). Repeatable, so
 * it never collides with the application's own version numbers; it runs after them, and again only when Idem's DDL
 * changes (every statement creates only what is missing). The starter declares it as a bean, which Spring Boot's
 * Flyway picks up.
 */
public final class IdemFlywayMigration extends RepeatableDdlMigration {
    private final String table;

    public IdemFlywayMigration(String table) {
        super("idem " + table, List.of(Dialect.values()));
        this.table = table;
    }

    @Override
    protected List<String> ddl(Dialect dialect) {
        return Schema.ddl(dialect, table);
    }
}
