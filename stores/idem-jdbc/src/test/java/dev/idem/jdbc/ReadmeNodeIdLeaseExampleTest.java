package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.id.MessageIdFormat;
import dev.idem.id.MessageIdGenerator;
import dev.idem.id.spi.NodeIdLeaseStore;
import dev.idem.testsupport.ReadmeSnippets;
import dev.idem.testsupport.TestDatabase;
import java.nio.file.Path;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

class ReadmeNodeIdLeaseExampleTest {
    private static final Path SOURCE = Path.of("src/test/java/dev/idem/jdbc/ReadmeNodeIdLeaseExampleTest.java");

    @Test
    void readmeJdbcNodeIdLeaseExample_compilesRuns_andIsShownVerbatim() {
        try (TestDatabase db = TestDatabase.postgres("ReadmeNodeIdLeaseExampleTest")) {
            DataSource dataSource = db.dataSource();
            JdbcNodeIdLeaseStore.builder(dataSource).createTableIfMissing(true).build();

            // readme:node-id-lease-jdbc begin
            NodeIdLeaseStore leases = JdbcNodeIdLeaseStore.builder(dataSource) // idem-jdbc, table idem_node_ids
                    .useDatabaseClock(true) // leases end by the database's clock
                    .build();
            // readme:node-id-lease-jdbc end
            try (MessageIdGenerator ids = MessageIdGenerator.builder()
                    .prefix("ORDER")
                    .nodeIdLease(leases, "order-service")
                    .build()) {
                String id = ids.nextString();

                assertThat(ids.nodeId()).isZero();
                assertThat(MessageIdFormat.defaults().parse(id).nodeId()).isZero();
                assertThat(id).startsWith("ORDER_");
            }
        }
        ReadmeSnippets.assertShown(SOURCE, "node-id-lease-jdbc");
    }
}
