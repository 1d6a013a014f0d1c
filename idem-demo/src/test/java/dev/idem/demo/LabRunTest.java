package dev.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.testsupport.TestServers;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A small lab on H2 and the in-process Kafka broker, every fault on: the verdict and the report files. */
class LabRunTest {
    @TempDir
    Path out;

    @Test
    @SuppressWarnings("unchecked")
    void smallLab_unguardedIsDamaged_everyGuardHolds_andTheReportsSaySo() throws Exception {
        ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        int status = Main.run(
                new String[] {
                    "--orders",
                    "300",
                    "--jdbc-url",
                    "jdbc:h2:mem:labruntest;DB_CLOSE_DELAY=-1;LOCK_TIMEOUT=10000",
                    "--no-redis",
                    "--producer-retry-rate",
                    "0.04",
                    "--concurrent-rate",
                    "0.03",
                    "--consumer-timeout-rate",
                    "0.02",
                    "--crash-rate",
                    "0.01",
                    "--reorder-rate",
                    "0.1",
                    "--quiet",
                    "--out",
                    out.toString()
                },
                new PrintStream(stdout, true, StandardCharsets.UTF_8),
                new PrintStream(stderr, true, StandardCharsets.UTF_8));
        String printed = stdout.toString(StandardCharsets.UTF_8);

        assertThat(status).as(printed + stderr.toString(StandardCharsets.UTF_8)).isZero();
        assertThat(printed).contains("PASSED", "DAMAGED (expected)", "Without a guard:");

        Map<String, Object> json = report(out);
        assertThat(json).containsEntry("broker", "kafka");
        assertEveryGuardHeld_andTheUnguardedDoubleCharged(json);
        assertThat((List<Map<String, Object>>) json.get("strategies"))
                .extracting(s -> s.get("id"))
                .containsExactly("none", "inbox", "lease_memory", "state_machine", "version");

        String html = Files.readString(out.resolve("idem-lab-report.html"), StandardCharsets.UTF_8);
        assertThat(html)
                .contains("What was injected", "Charges applied", "Orders charged more than once", "Throughput")
                .doesNotContain("<script", "src=\"http", "href=\"http", "@import");
        assertThat(html.split("<svg ", -1)).hasSizeGreaterThanOrEqualTo(5 + 1);
    }

    @Test
    void consumersThatNeverConsume_neverDrain_exitStatus3() throws Exception {
        SampleConsumerLab.Lab lab = SampleConsumerLab.run(
                List.of(
                        "--consumer-cmd",
                        "sleep 300",
                        "--consumers",
                        "1",
                        "--payments",
                        "20",
                        "--ready-timeout",
                        "1",
                        "--drain-timeout",
                        "3",
                        "--no-kills",
                        "--db-kills",
                        "0"),
                out);

        assertThat(lab.status()).as(lab.printed()).isEqualTo(3);
        assertThat(lab.json()).containsEntry("drained", false).containsEntry("exit_status", 3.0);
        assertThat(lab.number("lost")).isEqualTo(20);
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> report(Path out) throws Exception {
        return (Map<String, Object>)
                Json.parse(Files.readString(out.resolve("idem-lab-report.json"), StandardCharsets.UTF_8));
    }

    /** The SQL verdict of the JSON report: 0 double / 0 lost / 0 wrong state per guard, damage without one. */
    @SuppressWarnings("unchecked")
    static void assertEveryGuardHeld_andTheUnguardedDoubleCharged(Map<String, Object> json) {
        assertThat(json).containsEntry("guards_held", true).containsEntry("unguarded_damaged", true);
        assertThat((double) json.get("records_in_topic")).isGreaterThan((double) json.get("messages"));
        List<Map<String, Object>> strategies = (List<Map<String, Object>>) json.get("strategies");
        double paid = (double) json.get("paid_orders");
        for (Map<String, Object> s : strategies) {
            Map<String, Object> sql = (Map<String, Object>) s.get("sql");
            assertThat(s.get("finished")).as(s.get("id") + " finished").isEqualTo(true);
            if (s.get("guarded").equals(Boolean.TRUE)) {
                assertThat(sql)
                        .as("SQL verification of " + s.get("id"))
                        .containsEntry("double_charged_orders", 0.0)
                        .containsEntry("overcharged_amount", 0.0)
                        .containsEntry("lost_payments", 0.0)
                        .containsEntry("wrong_final_state", 0.0)
                        .containsEntry("wrong_balances", 0.0)
                        .containsEntry("charges", paid);
                assertThat((double) s.get("duplicates_suppressed")).isPositive();
            } else {
                assertThat((double) sql.get("double_charged_orders")).isPositive();
                assertThat((double) sql.get("charges")).isGreaterThan(paid);
            }
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void smallLab_withRedis_theRedisLeaseStoreHoldsToo() throws Exception {
        String redis = TestServers.redis().url();
        ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        int status = Main.run(
                new String[] {
                    "--orders",
                    "150",
                    "--jdbc-url",
                    "jdbc:h2:mem:labruntestredis;DB_CLOSE_DELAY=-1;LOCK_TIMEOUT=10000",
                    "--redis-url",
                    redis,
                    "--crash-rate",
                    "0.01",
                    "--concurrent-rate",
                    "0.03",
                    "--quiet",
                    "--out",
                    out.toString()
                },
                new PrintStream(stdout, true, StandardCharsets.UTF_8),
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));

        assertThat(status).as(stdout.toString(StandardCharsets.UTF_8)).isZero();
        Map<String, Object> json = (Map<String, Object>)
                Json.parse(Files.readString(out.resolve("idem-lab-report.json"), StandardCharsets.UTF_8));
        Map<String, Object> leaseRedis = ((List<Map<String, Object>>) json.get("strategies"))
                .stream()
                        .filter(s -> s.get("id").equals("lease_redis"))
                        .findFirst()
                        .orElseThrow();
        assertThat(leaseRedis).containsEntry("correct", true).containsEntry("finished", true);
        assertThat((Map<String, Object>) leaseRedis.get("sql"))
                .containsEntry("double_charged_orders", 0.0)
                .containsEntry("charges", json.get("paid_orders"));
    }
}
