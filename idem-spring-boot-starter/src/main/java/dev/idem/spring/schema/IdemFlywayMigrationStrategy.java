package dev.idem.spring.schema;

import dev.idem.ConfigurationException;
import java.util.Arrays;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.FlywayException;
import org.flywaydb.core.api.MigrationInfo;
import org.springframework.boot.flyway.autoconfigure.FlywayMigrationStrategy;

/**
 * Spring Boot's Flyway migration, on a schema that already has tables but no Flyway history too (Flyway then refuses
 * to migrate: the schema was made by other means). When Idem's migrations (the inbox's, the outbox's) are the only
 * ones the application has, there is nothing of the application's a baseline could skip: the schema is baselined and
 * Idem's tables created. Otherwise the start fails naming the two properties that baseline it at the version the schema
 * already has.
 */
final class IdemFlywayMigrationStrategy implements FlywayMigrationStrategy {
    /** The words of Flyway's refusal (it has no exception type of its own). */
    private static final String NO_HISTORY = "but no schema history table";

    @Override
    public void migrate(Flyway flyway) {
        try {
            flyway.migrate();
        } catch (FlywayException refused) {
            if (!String.valueOf(refused.getMessage()).contains(NO_HISTORY)) {
                throw refused;
            }
            if (!onlyIdemMigrations(flyway)) {
                throw new ConfigurationException(
                        "the database schema already has tables but no Flyway history, and the application has"
                                + " migrations of its own: set spring.flyway.baseline-on-migrate=true and"
                                + " spring.flyway.baseline-version=<the last version of your migrations that the schema"
                                + " already has; 0 when it has none of them, as when its tables are another"
                                + " application's> (docs/spring-boot.md, The table)",
                        refused);
            }
            Flyway.configure(flyway.getConfiguration().getClassLoader())
                    .configuration(flyway.getConfiguration())
                    .baselineOnMigrate(true)
                    .load()
                    .migrate();
        }
    }

    private static boolean onlyIdemMigrations(Flyway flyway) {
        ClassLoader loader = flyway.getConfiguration().getClassLoader();
        return Arrays.stream(flyway.info().all()).allMatch(m -> isIdemMigration(m, loader));
    }

    /** The inbox's and the outbox's tables: Java migrations of Idem's {@link RepeatableDdlMigration}. */
    private static boolean isIdemMigration(MigrationInfo migration, ClassLoader loader) {
        if (migration.getVersion() != null) {
            return false;
        }
        try {
            return RepeatableDdlMigration.class.isAssignableFrom(Class.forName(migration.getScript(), false, loader));
        } catch (ClassNotFoundException | LinkageError notAClass) {
            return false;
        }
    }
}
