package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.ConfigurationException;
import dev.idem.id.spi.NodeIdGrant;
import dev.idem.testkit.MutableClock;
import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** What the node-id lease contract does not cover: schema, clocks, connections and collations. */
class JdbcNodeIdLeaseStoreTest {
    private static final Duration LEASE = Duration.ofSeconds(30);

    @Test
    void missingTable_isAConfigurationError_namingTheShippedDdl() {
        try (TestDatabase db = TestDatabase.h2("NodeIdsMissingTable")) {
            JdbcNodeIdLeaseStore store =
                    JdbcNodeIdLeaseStore.builder(db.dataSource()).build();

            assertThatThrownBy(() -> store.acquire("orders", "a", 3, LEASE, Instant.now()))
                    .isInstanceOf(ConfigurationException.class)
                    .hasMessageContaining("table idem_node_ids does not exist")
                    .hasMessageContaining("/dev/idem/jdbc/ddl/h2.sql");
        }
    }

    @Test
    void eachStoresCreateTableIfMissing_createsOnlyItsOwnTable() throws SQLException {
        try (TestDatabase db = TestDatabase.h2("NodeIdsOwnTable")) {
            JdbcStore.builder(db.dataSource()).createTableIfMissing(true).build();
            assertThat(tableExists(db, "IDEM_KEYS")).isTrue();
            assertThat(tableExists(db, "IDEM_NODE_IDS")).isFalse();

            JdbcNodeIdLeaseStore.builder(db.dataSource())
                    .table("generator_leases")
                    .createTableIfMissing(true)
                    .build();
            assertThat(tableExists(db, "GENERATOR_LEASES")).isTrue();
            assertThat(tableExists(db, "IDEM_NODE_IDS")).isFalse();
        }
    }

    @Test
    void withTheDatabaseClock_leasesEndByTheDatabasesTime_notTheBuildersClock() {
        try (TestDatabase db = TestDatabase.h2("NodeIdsDatabaseClock")) {
            MutableClock longAgo = MutableClock.at(Instant.parse("2001-01-01T00:00:00Z"));
            JdbcNodeIdLeaseStore store = JdbcNodeIdLeaseStore.builder(db.dataSource())
                    .clock(longAgo)
                    .useDatabaseClock(true)
                    .createTableIfMissing(true)
                    .build();
            Instant before = Instant.now().minusSeconds(60);

            NodeIdGrant grant =
                    store.acquire("orders", "a", 3, LEASE, Instant.now()).orElseThrow();

            assertThat(grant.expiresAt()).isAfter(before.plus(LEASE));
        }
    }

    @Test
    void pooledConnectionsWithAutoCommitOff_commitEveryLease_andComeBackAsTheyCame() throws SQLException {
        try (TestDatabase db = TestDatabase.postgres("NodeIdsAutoCommitOff")) {
            HikariConfig config = new HikariConfig();
            config.setJdbcUrl(db.url());
            config.setAutoCommit(false);
            config.setMaximumPoolSize(1);
            try (HikariDataSource pool = new HikariDataSource(config)) {
                JdbcNodeIdLeaseStore store = JdbcNodeIdLeaseStore.builder(pool)
                        .createTableIfMissing(true)
                        .build();

                int first = store.acquire("orders", "a", 3, LEASE, Instant.now())
                        .orElseThrow()
                        .nodeId();
                int second = store.acquire("orders", "b", 3, LEASE, Instant.now())
                        .orElseThrow()
                        .nodeId();

                assertThat(first).isZero();
                assertThat(second).isOne();
                try (Connection c = db.connection();
                        ResultSet rs = c.createStatement().executeQuery("SELECT COUNT(*) FROM idem_node_ids")) {
                    rs.next();
                    assertThat(rs.getInt(1))
                            .as("rows committed, seen from another connection")
                            .isEqualTo(2);
                }
                try (Connection c = pool.getConnection()) {
                    assertThat(c.getAutoCommit()).isFalse();
                }
            }
        }
    }

    @Test
    void spacesDifferingOnlyInCase_areIndependent_onMariaDb() {
        try (TestDatabase db = TestDatabase.mariadb("NodeIdsCase")) {
            JdbcNodeIdLeaseStore store = JdbcNodeIdLeaseStore.builder(db.dataSource())
                    .createTableIfMissing(true)
                    .build();

            store.acquire("orders", "a", 0, LEASE, Instant.now()).orElseThrow();

            assertThat(store.acquire("Orders", "b", 0, LEASE, Instant.now()))
                    .map(NodeIdGrant::nodeId)
                    .contains(0);
        }
    }

    private static boolean tableExists(TestDatabase db, String table) throws SQLException {
        try (Connection c = db.connection();
                ResultSet rs = c.getMetaData().getTables(null, null, table, null)) {
            return rs.next();
        }
    }
}
