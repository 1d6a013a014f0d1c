package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.testsupport.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * How {@code createTableIfMissing} decides that an object exists: where the statement would create it, not wherever
 * the connection could see one of that name (found by the review of the catalog lookup).
 */
class SchemaLookupTest {

    /**
     * PostgreSQL creates in the first schema of the search path; a lookup that resolved the name through the whole
     * path found another service's {@code idem_keys} in a later schema, created nothing, and the store shared that
     * service's keys and fencing sequence.
     */
    @Test
    void postgres_aTableOfTheSameNameLaterOnTheSearchPath_doesNotCountAsOurs() throws SQLException {
        try (TestDatabase ours = TestDatabase.postgres("SchemaLookupOurs");
                TestDatabase shared = TestDatabase.postgres("SchemaLookupShared")) {
            JdbcStore.builder(shared.dataSource())
                    .createTableIfMissing(true)
                    .build()
                    .close();
            String bothOnThePath = ours.url()
                    .replace("currentSchema=" + ours.name(), "currentSchema=" + ours.name() + "," + shared.name());

            JdbcStore.builder(new UrlDataSource(bothOnThePath))
                    .createTableIfMissing(true)
                    .build()
                    .close();

            assertThat(relationsIn(ours, ours.name()))
                    .containsExactlyInAnyOrder(
                            "idem_keys", "idem_keys_pkey", "idem_keys_expires_idx", "idem_keys_fencing");
        }
    }

    /** MySQL-family index names are per table: an index of that name on another table is not the statement's. */
    @Test
    void mariadb_anIndexOfTheSameNameOnAnotherTable_doesNotCountAsOurs() throws SQLException {
        try (TestDatabase db = TestDatabase.mariadb("SchemaLookup")) {
            db.execute("CREATE TABLE other_t (v INT, INDEX v_idx (v))");
            db.execute("CREATE TABLE our_t (v INT)");

            Schema.createMissing(
                    db.dataSource(), Dialect.MARIADB, List.of("CREATE INDEX IF NOT EXISTS v_idx ON our_t (v)"), "test");

            try (Connection c = db.connection();
                    ResultSet rs = c.getMetaData().getIndexInfo(db.name(), null, "our_t", false, false)) {
                assertThat(rs.next()).as("an index on our_t").isTrue();
                assertThat(rs.getString("INDEX_NAME")).isEqualTo("v_idx");
            }
        }
    }

    private static List<String> relationsIn(TestDatabase db, String schema) throws SQLException {
        try (Connection c = db.connection();
                PreparedStatement ps = c.prepareStatement("SELECT r.relname FROM pg_class r JOIN pg_namespace n"
                        + " ON n.oid = r.relnamespace WHERE n.nspname = ?")) {
            ps.setString(1, schema);
            try (ResultSet rs = ps.executeQuery()) {
                List<String> names = new ArrayList<>();
                while (rs.next()) {
                    names.add(rs.getString(1));
                }
                return names;
            }
        }
    }
}
