package dev.idem.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.function.Function;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class TestDatabaseTest {

    private static TestDatabase open(TestDatabase.Engine engine) {
        Function<String, TestDatabase> factory = switch (engine) {
            case POSTGRESQL -> TestDatabase::postgres;
            case MARIADB -> TestDatabase::mariadb;
            case H2 -> TestDatabase::h2;
        };
        return factory.apply("TestDatabaseTest");
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.Engine.class)
    void twoTestDatabases_neverSeeEachOthersTables(TestDatabase.Engine engine) throws SQLException {
        try (TestDatabase first = open(engine);
                TestDatabase second = open(engine)) {
            first.execute("CREATE TABLE shared_name (id INT PRIMARY KEY)");
            first.execute("INSERT INTO shared_name VALUES (1)");

            second.execute("CREATE TABLE shared_name (id INT PRIMARY KEY)");

            try (Connection c = second.connection();
                    ResultSet rs = c.createStatement().executeQuery("SELECT COUNT(*) FROM shared_name")) {
                rs.next();
                assertThat(rs.getInt(1)).isZero();
            }
            assertThat(first.name()).isNotEqualTo(second.name());
        }
    }

    @ParameterizedTest
    @EnumSource(TestDatabase.Engine.class)
    void closedTestDatabase_isDropped(TestDatabase.Engine engine) {
        TestDatabase db = open(engine);
        db.execute("CREATE TABLE t (id INT PRIMARY KEY)");
        db.close();

        assertThatThrownBy(() -> db.execute("SELECT 1")).isInstanceOf(RuntimeException.class);
    }
}
