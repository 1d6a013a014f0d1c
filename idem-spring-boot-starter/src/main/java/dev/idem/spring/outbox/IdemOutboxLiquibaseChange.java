package dev.idem.spring.outbox;

import dev.idem.ConfigurationException;
import dev.idem.jdbc.Dialect;
import dev.idem.outbox.OutboxSchema;
import java.util.Locale;
import java.util.Map;
import liquibase.change.custom.CustomSqlChange;
import liquibase.database.Database;
import liquibase.exception.ValidationErrors;
import liquibase.resource.ResourceAccessor;
import liquibase.statement.SqlStatement;
import liquibase.statement.core.RawSqlStatement;

/**
 * The outbox tables as a Liquibase change ({@link OutboxSchema#ddl}). Include {@code
 * classpath:dev/idem/spring/liquibase/idem-outbox-changelog.xml} from your master changelog; set the parameter {@code
 * table} there if you changed {@code idem.outbox.table}.
 */
public final class IdemOutboxLiquibaseChange implements CustomSqlChange {
    private static final Map<String, Dialect> DIALECTS =
            Map.of("postgresql", Dialect.POSTGRESQL, "mariadb", Dialect.MARIADB, "h2", Dialect.H2);

    private String table = "idem_outbox";

    public void setTable(String table) {
        this.table = table;
    }

    @Override
    public SqlStatement[] generateStatements(Database database) {
        Dialect dialect = DIALECTS.get(database.getShortName().toLowerCase(Locale.ROOT));
        if (dialect == null) {
            throw new ConfigurationException(unsupported(database));
        }
        return OutboxSchema.ddl(dialect, table).stream()
                .map(RawSqlStatement::new)
                .toArray(SqlStatement[]::new);
    }

    @Override
    public String getConfirmationMessage() {
        return "Idem outbox table " + table + " created";
    }

    @Override
    public void setUp() {}

    @Override
    public void setFileOpener(ResourceAccessor resourceAccessor) {}

    @Override
    public ValidationErrors validate(Database database) {
        ValidationErrors errors = new ValidationErrors();
        if (!DIALECTS.containsKey(database.getShortName().toLowerCase(Locale.ROOT))) {
            errors.addError(unsupported(database));
        }
        return errors;
    }

    private static String unsupported(Database database) {
        return "Idem's outbox migration covers postgresql, mariadb and h2, not " + database.getShortName();
    }
}
