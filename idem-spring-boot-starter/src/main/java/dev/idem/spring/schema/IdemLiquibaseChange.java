package dev.idem.spring.schema;

import liquibase.change.custom.CustomSqlChange;
import liquibase.database.Database;
import liquibase.exception.ValidationErrors;
import liquibase.resource.ResourceAccessor;
import liquibase.statement.SqlStatement;
import liquibase.statement.core.RawSqlStatement;

/**
 * Idem's tables as a Liquibase change ({@link IdemDdl}: the DDL idem-jdbc ships), so that {@code updateSql} shows the
 * statements. Include {@code classpath:dev/idem/spring/liquibase/idem-changelog.xml} from your master changelog; set
 * the parameter {@code table} there if you changed {@code idem.jdbc.table}.
 */
public final class IdemLiquibaseChange implements CustomSqlChange {
    private String table = "idem_keys";

    public void setTable(String table) {
        this.table = table;
    }

    @Override
    public SqlStatement[] generateStatements(Database database) {
        return IdemDdl.statements(database.getShortName(), table).stream()
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
        if (!java.util.List.of("postgresql", "mariadb", "mysql", "h2").contains(database.getShortName())) {
            errors.addError(
                    "Idem's migration covers postgresql, mariadb, mysql and h2, not " + database.getShortName());
        }
        return errors;
    }
}
