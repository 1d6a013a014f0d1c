package dev.idem.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.IdempotencyKey;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.testsupport.PrivateServer;
import java.io.IOException;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * {@code useDatabaseClock(true)} on MariaDB in a time zone with daylight saving time. The hour 02:00–03:00 of
 * 2026-10-25 happens twice in Europe/Berlin (CEST, then CET); local time cannot tell them apart, UTC can. A private
 * server, because the shared one has no time zone tables and loading them is a change to the whole server.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(120)
class MariaDbDatabaseClockTest {
    private static final Instant FIRST_0230 = Instant.parse("2026-10-25T00:30:00Z"); // 02:30 CEST
    private static final Instant SECOND_0230 = Instant.parse("2026-10-25T01:30:00Z"); // 02:30 CET

    private PrivateServer mariadb;

    @BeforeAll
    void startServerWithBerlinTime() throws IOException, InterruptedException {
        mariadb = PrivateServer.mariadb();
        Process load = new ProcessBuilder(
                        "sh",
                        "-c",
                        "mariadb-tzinfo-to-sql /usr/share/zoneinfo/Europe/Berlin Europe/Berlin"
                                + " | mariadb --protocol=tcp -h 127.0.0.1 -P " + mariadb.port() + " -u root mysql")
                .redirectErrorStream(true)
                .redirectOutput(mariadb.directory().resolve("tzinfo.log").toFile())
                .start();
        assertThat(load.waitFor())
                .as("loading Europe/Berlin, see %s", Path.of("tzinfo.log"))
                .isZero();
    }

    @AfterAll
    void stopServer() {
        if (mariadb != null) {
            mariadb.close();
        }
    }

    /** A data source whose sessions are in Europe/Berlin at {@code now}. */
    private UrlDataSource berlinAt(Instant now) {
        return new UrlDataSource(
                mariadb.url() + "&sessionVariables=time_zone='Europe/Berlin',timestamp=" + now.getEpochSecond());
    }

    /** Regression: {@code UNIX_TIMESTAMP(NOW(3))} read one of the two 02:30 an hour wrong. */
    @Test
    void databaseNow_inBothOccurrencesOfTheRepeatedHour_isTheRightInstant() throws SQLException {
        for (Instant now : List.of(FIRST_0230, SECOND_0230)) {
            try (Connection c = berlinAt(now).getConnection()) {
                assertThat(Instant.ofEpochMilli(Sql.databaseNowMillis(Dialect.MARIADB, c)))
                        .as("database clock at %s", now)
                        .isEqualTo(now);
            }
        }
    }

    @Test
    void leaseDeadline_onTheDatabaseClock_inTheRepeatedHour_isOneLeaseFromNow() {
        for (Instant now : List.of(FIRST_0230, SECOND_0230)) {
            JdbcStore store = JdbcStore.builder(berlinAt(now))
                    .useDatabaseClock(true)
                    .createTableIfMissing(true)
                    .build();

            ClaimResult claimed = store.claim(
                    ClaimRequest.of(IdempotencyKey.of("dst", "k" + now.getEpochSecond()), "o", Duration.ofMinutes(1)));

            assertThat(((ClaimResult.Claimed) claimed).leaseUntil()).isEqualTo(now.plus(Duration.ofMinutes(1)));
        }
    }
}
