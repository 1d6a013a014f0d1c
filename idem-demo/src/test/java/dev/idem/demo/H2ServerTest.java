package dev.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The consumer lab's default database is one that another process reaches through its URL. */
class H2ServerTest {
    @TempDir
    Path directory;

    @Test
    void whatAConsumerWritesThroughTheUrl_theLabReads() throws Exception {
        try (H2Server server = H2Server.start(directory);
                LabDatabase lab = LabDatabase.connect(server.url(), 1)) {
            try (Connection consumer = DriverManager.getConnection(server.url());
                    Statement s = consumer.createStatement()) {
                s.execute(EffectsQuery.LEDGER_DDL);
                s.execute("INSERT INTO " + EffectsQuery.LEDGER + " VALUES ('p1', 'a1', 100)");
            }

            assertThat(new EffectsQuery(lab, null).count()).isEqualTo(1);
            assertThat(server.url()).startsWith("jdbc:h2:tcp://127.0.0.1:");
        }
    }
}
