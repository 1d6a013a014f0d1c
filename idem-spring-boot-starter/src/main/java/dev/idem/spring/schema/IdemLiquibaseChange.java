package dev.idem.spring.schema;

import dev.idem.ConfigurationException;
import dev.idem.jdbc.Dialect;
import dev.idem.jdbc.Schema;
import java.util.Locale;
import java.util.Map;
import liquibase.change.custom.CustomSqlChange;
import liquibase.database.Database;
import liquibase.exception.ValidationErrors;
import liquibase.resource.ResourceAccessor;
import liquibase.statement.SqlStatement;
import liquibase.statement.core.RawSqlStatement;

/**
 * Idem's tables as a Liquibase change ({@link Schema#ddl}: the DDL idem-jdbc ships), so that {@code updateSql} shows the
 * statements. Include {@code classpath:dev/idem/spring/liquibase/idem-changelog.xml} from your master changelog; set
 * the parameter {@code table} there if you changed {@code idem.jdbc.table}.
 */
public final class IdemLiquibaseChange implements CustomSqlChange {
    /** Liquibase's short database names, to Idem's dialects. */
    private static final Map<String, Dialect> DIALECTS = Map.of(
            "postgresql", Dialect.POSTGRESQL, "mariadb", Dialect.MARIADB, "mysql", Dialect.MYSQL, "h2", Dialect.H2);

    private String table = "idem_keys";

    public void setTable(String table) {
        this.table = table;
    }

    @Override
    public SqlStatement[] generateStatements(Database database) {
        return Schema.ddl(dialect(database), table).stream()
                .map(RawSqlStatement::new)
                .toArray(SqlStatement[]::new);
    }

    @Override
    public String getConfirmationMessage() {
        return "Idem table " + table + " created";
    }

    @Override
    public void setUp() {}

    @Override
    public void setFileOpener(ResourceAccessor resourceAccessor) {}

    @Override
    public ValidationErrors validate(Database database) {
        ValidationErrors errors = new ValidationErrors();
        if (!DIALECTS.containsKey(database.getShortName())) {
            errors.addError(unsupported(database));
        }
        return errors;
    }

    private static Dialect dialect(Database database) {
        Dialect dialect = DIALECTS.get(database.getShortName().toLowerCase(Locale.ROOT));
        if (dialect == null) {
            throw new ConfigurationException(unsupported(database));
        }
        return dialect;
    }

    private static String unsupported(Database database) {
        return "Idem's migration covers postgresql, mariadb, mysql and h2, not " + database.getShortName();
    }
}
