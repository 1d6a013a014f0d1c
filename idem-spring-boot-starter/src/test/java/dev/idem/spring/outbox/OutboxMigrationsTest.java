package dev.idem.spring.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.outbox.Outbox;
import dev.idem.outbox.OutboxMessage;
import dev.idem.outbox.OutboxRelay;
import dev.idem.outbox.spi.OutboxRecord;
import dev.idem.spring.schema.MigrationTool;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The Flyway and Liquibase migrations create the outbox tables on each database; the outbox and its relay work on them. */
class OutboxMigrationsTest {

    static Stream<Arguments> databases() {
        return Stream.<Function<String, TestDatabase>>of(
                        TestDatabase::postgres, TestDatabase::mariadb, TestDatabase::h2)
                .flatMap(db -> Stream.of(Arguments.of(db, "flyway"), Arguments.of(db, "liquibase")));
    }

    @ParameterizedTest(name = "{1}")
    @MethodSource("databases")
    void migration_createsTheOutboxTables_andTheRelayPublishesFromThem(
            Function<String, TestDatabase> engine, String tool) throws Exception {
        try (TestDatabase db = engine.apply("outbox_" + tool)) {
            migrate(tool, db.dataSource());
            migrate(tool, db.dataSource()); // a second run changes nothing and does not fail
            String id;
            try (Connection c = db.connection()) {
                c.setAutoCommit(false);
                id = Outbox.builder()
                        .build()
                        .send(c, OutboxMessage.to("payments").key("o-1").payload("paid"));
                c.commit();
            }
            List<OutboxRecord> published = new CopyOnWriteArrayList<>();
            try (OutboxRelay relay = OutboxRelay.builder(db.dataSource(), r -> {
                        published.add(r);
                        return CompletableFuture.completedFuture(null);
                    })
                    .build()) {
                assertThat(relay.relayOnce()).isEqualTo(1);
            }
            assertThat(published).extracting(OutboxRecord::messageId).containsExactly(id);
        }
    }

    private static void migrate(String tool, DataSource dataSource) throws Exception {
        MigrationTool.migrate(
                tool,
                dataSource,
                new IdemOutboxFlywayMigration("idem_outbox"),
                "dev/idem/spring/liquibase/idem-outbox-changelog.xml");
    }
}
