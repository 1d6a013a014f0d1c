package dev.idem.spring.schema;

import java.sql.Connection;
import javax.sql.DataSource;
import liquibase.Liquibase;
import liquibase.database.DatabaseFactory;
import liquibase.database.jvm.JdbcConnection;
import liquibase.resource.ClassLoaderResourceAccessor;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.migration.JavaMigration;

/** The migration tests' two tools: Flyway running one Java migration, or Liquibase running one changelog. */
public final class MigrationTool {
    private MigrationTool() {}

    /** Runs {@code flywayMigration} when {@code tool} is {@code flyway}, else {@code liquibaseChangelog}. */
    public static void migrate(
            String tool, DataSource dataSource, JavaMigration flywayMigration, String liquibaseChangelog)
            throws Exception {
        if (tool.equals("flyway")) {
            Flyway.configure()
                    .dataSource(dataSource)
                    .locations("classpath:no/such/location")
                    .failOnMissingLocations(false)
                    .javaMigrations(flywayMigration)
                    .load()
                    .migrate();
        } else {
            try (Connection c = dataSource.getConnection()) {
                Liquibase liquibase = new Liquibase(
                        liquibaseChangelog,
                        new ClassLoaderResourceAccessor(),
                        DatabaseFactory.getInstance().findCorrectDatabaseImplementation(new JdbcConnection(c)));
                liquibase.update("");
            }
        }
    }
}
