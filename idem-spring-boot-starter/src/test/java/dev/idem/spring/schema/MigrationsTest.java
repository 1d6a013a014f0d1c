package dev.idem.spring.schema;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.Delivery;
import dev.idem.Outcome;
import dev.idem.jdbc.JdbcInbox;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The Flyway and Liquibase migrations create, on each database, exactly the keys table that idem-jdbc's own
 * createTableIfMissing creates from the shipped DDL, the node-id table and the fencing sequence; the inbox and the
 * lease store work on them.
 */
class MigrationsTest {

    static Stream<Arguments> databases() {
        return Stream.<Function<String, TestDatabase>>of(
                        TestDatabase::postgres, TestDatabase::mariadb, TestDatabase::h2)
                .flatMap(db -> Stream.of(Arguments.of(db, "flyway"), Arguments.of(db, "liquibase")));
    }

    @ParameterizedTest(name = "{1}")
    @MethodSource("databases")
    void migration_createsTheShippedTable_andTheInboxWorksOnIt(Function<String, TestDatabase> engine, String tool)
            throws Exception {
        try (TestDatabase migrated = engine.apply("migrated_" + tool);
                TestDatabase reference = engine.apply("reference_" + tool)) {
            migrate(tool, migrated.dataSource());
            migrate(tool, migrated.dataSource()); // a second run changes nothing and does not fail
            JdbcInbox.builder(reference.dataSource())
                    .namespace("ref")
                    .createTableIfMissing(true)
                    .build();

            assertThat(columns(migrated.dataSource(), "idem_keys"))
                    .isEqualTo(columns(reference.dataSource(), "idem_keys"))
                    .isNotEmpty();
            assertThat(columns(migrated.dataSource(), "idem_node_ids")).hasSize(6);

            JdbcInbox inbox =
                    JdbcInbox.builder(migrated.dataSource()).namespace("orders").build();
            assertThat(inbox.handle(Delivery.of("o-1"), c -> Outcome.processed())
                            .type())
                    .isEqualTo(Outcome.Type.PROCESSED);
            assertThat(inbox.handle(Delivery.of("o-1"), c -> Outcome.processed())
                            .type())
                    .isEqualTo(Outcome.Type.DUPLICATE);
        }
    }

    private static void migrate(String tool, DataSource dataSource) throws Exception {
        MigrationTool.migrate(
                tool, dataSource, new IdemFlywayMigration("idem_keys"), "dev/idem/spring/liquibase/idem-changelog.xml");
    }

    /** Column name, type, size and nullability of {@code table} in the connection's schema, in order. */
    private static List<String> columns(DataSource dataSource, String table) throws Exception {
        List<String> columns = new ArrayList<>();
        try (Connection c = dataSource.getConnection()) {
            String catalog = c.getCatalog();
            String schema = c.getSchema();
            for (String name : List.of(table, table.toUpperCase(Locale.ROOT))) {
                try (ResultSet rs = c.getMetaData().getColumns(catalog, schema, name, null)) {
                    while (rs.next()) {
                        columns.add(rs.getString("COLUMN_NAME").toLowerCase(Locale.ROOT) + " "
                                + rs.getString("TYPE_NAME") + "(" + rs.getInt("COLUMN_SIZE") + ") "
                                + rs.getString("IS_NULLABLE"));
                    }
                }
                if (!columns.isEmpty()) {
                    break;
                }
            }
        }
        return columns;
    }
}
