package dev.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

/** The lab ends the consumers' database sessions, and only theirs, on the real PostgreSQL and MariaDB. */
class DatabaseBackendsTest {

    @Test
    void postgres_endsTheSessionsOpenedWithTheRunsUrl_andNoOther() throws Exception {
        try (TestDatabase schema = TestDatabase.postgres("DatabaseBackendsTest");
                LabDatabase lab = LabDatabase.connect(schema.url(), 2)) {
            DatabaseBackends backends = new DatabaseBackends(lab, TestServers.uniquePrefix("backends"));
            try (Connection consumer = DriverManager.getConnection(backends.consumerUrl(schema.url()));
                    Connection bystander = DriverManager.getConnection(schema.url())) {
                select(consumer);

                assertThat(backends.terminate()).isEqualTo(1);

                assertThatThrownBy(() -> select(consumer)).isInstanceOf(SQLException.class);
                select(bystander);
                assertThat(lab.queryLong("SELECT 1")).isEqualTo(1);
            }
        }
    }

    @Test
    void mariadb_endsTheSessionsOnTheRunsDatabase_andNoneOnAnother() throws Exception {
        try (TestDatabase database = TestDatabase.mariadb("DatabaseBackendsTest");
                TestDatabase other = TestDatabase.mariadb("DatabaseBackendsOther");
                LabDatabase lab = LabDatabase.connect(database.url(), 2)) {
            DatabaseBackends backends = new DatabaseBackends(lab, "unused-on-mariadb");
            assertThat(backends.consumerUrl(database.url())).isEqualTo(database.url());
            try (Connection consumer = DriverManager.getConnection(database.url());
                    Connection bystander = DriverManager.getConnection(other.url())) {
                select(consumer);

                assertThat(backends.terminate()).isPositive();

                assertThatThrownBy(() -> select(consumer)).isInstanceOf(SQLException.class);
                select(bystander);
            }
        }
    }

    @Test
    void h2_cannotEndSessions_andSaysWhy() {
        try (LabDatabase lab = LabDatabase.connect("jdbc:h2:mem:backends;DB_CLOSE_DELAY=-1", 1)) {
            assertThat(new DatabaseBackends(lab, "x").unavailable())
                    .hasValueSatisfying(why -> assertThat(why).contains("PostgreSQL or MariaDB"));
        }
    }

    private static void select(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute("SELECT 1");
        }
    }
}
