package dev.idem.spring.schema;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.ConfigurationException;
import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.spring.outbox.IdemOutboxFlywayMigration;
import dev.idem.testsupport.TestDatabase;
import java.util.List;
import javax.sql.DataSource;
import org.flywaydb.core.api.FlywayException;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * An application whose schema already has tables (created before Flyway came, e.g. to add Idem) and no Flyway
 * history, on PostgreSQL, where Flyway refuses to migrate: with Idem's migration its only one, the starter baselines the
 * schema and creates Idem's table; with migrations of its own, the start fails naming the baseline properties, and
 * with them (docs/spring-boot.md) Idem's table is created and the application's version 1 skipped.
 */
class FlywayExistingSchemaTest {
    private static final String ACCOUNTS_V1 = "classpath:dev/idem/spring/schema/existing";

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(IdemFlywayAutoConfiguration.class, FlywayAutoConfiguration.class))
            .withPropertyValues("spring.flyway.locations=" + ACCOUNTS_V1);

    @Test
    void nonEmptySchemaWithoutHistory_withMigrationsOfItsOwn_failsTheStart_namingTheBaselineProperties() {
        try (TestDatabase db = existingSchema("flyway_nobaseline")) {
            runner.withBean(DataSource.class, db::dataSource).run(context -> {
                assertThat(context).hasFailed();
                Throwable failure = context.getStartupFailure();
                while (failure != null && !(failure instanceof ConfigurationException)) {
                    failure = failure.getCause();
                }
                assertThat(failure)
                        .isInstanceOf(ConfigurationException.class)
                        .hasMessageContaining("spring.flyway.baseline-on-migrate=true")
                        .hasMessageContaining("spring.flyway.baseline-version")
                        .hasRootCauseInstanceOf(FlywayException.class);
            });
        }
    }

    @Test
    void nonEmptySchemaWithoutHistory_andNoMigrationsOfItsOwn_startsWithIdemTable() {
        try (TestDatabase db = existingSchema("flyway_idemonly")) {
            runner.withBean(DataSource.class, db::dataSource)
                    .withPropertyValues("spring.flyway.locations=classpath:dev/idem/spring/schema/none")
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(history(db)).containsExactly("BASELINE:1", "JDBC:R");
                        assertInboxWorks(db);
                    });
        }
    }

    @Test
    void nonEmptySchemaWithoutHistory_andNoMigrationsOfItsOwn_withTheOutboxToo_startsWithBothIdemTables() {
        try (TestDatabase db = existingSchema("flyway_idemoutbox")) {
            runner.withBean(DataSource.class, db::dataSource)
                    .withBean(IdemOutboxFlywayMigration.class, () -> new IdemOutboxFlywayMigration("idem_outbox"))
                    .withPropertyValues("spring.flyway.locations=classpath:dev/idem/spring/schema/none")
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(history(db)).containsExactly("BASELINE:1", "JDBC:R", "JDBC:R");
                        assertInboxWorks(db);
                        assertThat(new JdbcTemplate(db.dataSource())
                                        .queryForObject("SELECT COUNT(*) FROM idem_outbox", Long.class))
                                .isZero();
                    });
        }
    }

    @Test
    void nonEmptySchemaWithoutHistory_withBaselineOnMigrate_createsIdemTable_andSkipsTheBaselinedVersion() {
        try (TestDatabase db = existingSchema("flyway_baseline")) {
            runner.withBean(DataSource.class, db::dataSource)
                    .withPropertyValues("spring.flyway.baseline-on-migrate=true", "spring.flyway.baseline-version=1")
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(history(db)).containsExactly("BASELINE:1", "JDBC:R"); // V1 not run again
                        assertInboxWorks(db);
                    });
        }
    }

    @Test
    void schemaWithOthersTablesOnly_withBaselineVersionZero_runsEveryMigrationOfTheApplications_andIdems() {
        try (TestDatabase db = TestDatabase.postgres("flyway_baseline0")) {
            db.execute("CREATE TABLE idem_keys_of_another_service (id VARCHAR(64) PRIMARY KEY)");
            runner.withBean(DataSource.class, db::dataSource)
                    .withPropertyValues("spring.flyway.baseline-on-migrate=true", "spring.flyway.baseline-version=0")
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(history(db)).containsExactly("BASELINE:0", "SQL:1", "JDBC:R");
                        db.execute("INSERT INTO account VALUES ('alice', 100)"); // V1 ran
                        assertInboxWorks(db);
                    });
        }
    }

    /** The Flyway history: type and version (R for the repeatable Idem migration) of each row, in order. */
    private static List<String> history(TestDatabase db) {
        return new JdbcTemplate(db.dataSource())
                .queryForList(
                        "SELECT type || ':' || COALESCE(version, 'R') FROM flyway_schema_history ORDER BY installed_rank",
                        String.class);
    }

    private static void assertInboxWorks(TestDatabase db) {
        JdbcInbox inbox =
                JdbcInbox.builder(db.dataSource()).namespace("payments").build();
        assertThat(inbox.handle(Delivery.of("p-1"), c -> Outcome.processed()).type())
                .isEqualTo(Outcome.Type.PROCESSED);
        assertThat(inbox.handle(Delivery.of("p-1"), c -> Outcome.processed()).type())
                .isEqualTo(Outcome.Type.DUPLICATE);
    }

    /** A PostgreSQL schema that already holds the application's table, and no Flyway history. */
    private static TestDatabase existingSchema(String name) {
        TestDatabase db = TestDatabase.postgres(name);
        db.execute("CREATE TABLE account (id VARCHAR(64) PRIMARY KEY, balance_cents BIGINT NOT NULL)");
        return db;
    }
}
