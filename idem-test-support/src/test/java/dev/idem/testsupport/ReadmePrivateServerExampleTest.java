package dev.idem.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class ReadmePrivateServerExampleTest {
    private static final Path SOURCE =
            Path.of("src/test/java/dev/idem/testsupport/ReadmePrivateServerExampleTest.java");

    @Test
    void readmePrivateServerExample_restartsItsOwnServer_andIsShownVerbatim() throws Exception {
        // readme:private-server begin
        try (PrivateServer pg = PrivateServer.postgres(); // free port, temporary directory, deleted on close
                TestDatabase db = TestDatabase.postgres(pg.server(), "MyRestartTest")) {
            db.execute("CREATE TABLE t (id INT PRIMARY KEY)");
            db.execute("INSERT INTO t VALUES (1)");
            pg.restart(); // pg_ctl stop -m fast + start; or pg.kill(); pg.start(); for a crash
            await().atMost(Duration.ofSeconds(30))
                    .ignoreExceptions() // until the pool has replaced its broken connections
                    .untilAsserted(() -> db.execute("INSERT INTO t VALUES (2)"));
            assertThat(count(db, "SELECT COUNT(*) FROM t")).isEqualTo(2); // the committed row survived
        }
        // readme:private-server end

        ReadmeSnippets.assertShown(SOURCE, "private-server");
    }

    private static long count(TestDatabase db, String query) throws SQLException {
        try (Connection c = db.connection();
                ResultSet rs = c.createStatement().executeQuery(query)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
