package dev.idem.spring.outbox;

import dev.idem.jdbc.Dialect;
import dev.idem.outbox.OutboxSchema;
import dev.idem.spring.schema.RepeatableDdlMigration;
import java.util.List;

/**
 * The outbox tables as a Flyway repeatable migration ({@link OutboxSchema#ddl}: the DDL idem-outbox ships), beside
 * the inbox's; each statement creates only what is missing.
 */
public final class IdemOutboxFlywayMigration extends RepeatableDdlMigration {
    private final String table;

    public IdemOutboxFlywayMigration(String table) {
        super("idem outbox " + table, List.of(Dialect.POSTGRESQL, Dialect.MARIADB, Dialect.H2));
        this.table = table;
    }

    @Override
    protected List<String> ddl(Dialect dialect) {
        return OutboxSchema.ddl(dialect, table);
    }
}
