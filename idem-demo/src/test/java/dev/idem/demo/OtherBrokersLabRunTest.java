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

/**
 * A small lab over each broker besides Kafka (the local servers, skipped without one, failed with {@code
 * IDEM_REQUIRE_SERVICES=1}; RocketMQ in-process): the same SQL verdict, the report names the broker, and what the broker cannot produce is
 * reported as such.
 */
class OtherBrokersLabRunTest {
    @TempDir
    Path out;

    @Test
    void rabbitmq_unguardedDoubleCharges_everyGuardHolds() throws Exception {
        Map<String, Object> json =
                lab("rabbitmq", "--rabbitmq-url", TestServers.rabbitmq().url());

        assertThat(json).containsEntry("broker", "rabbitmq");
        LabRunTest.assertEveryGuardHeld_andTheUnguardedDoubleCharged(json);
        Map<String, String> injected = injected(json);
        assertThat(injected)
                .hasEntrySatisfying(
                        "same message to two consumers at once (3.0%)",
                        v -> assertThat(v).startsWith("n/a on rabbitmq"))
                .hasEntrySatisfying(
                        "connection lost while handled, redelivered before the ack (2.0%)",
                        v -> assertThat(Long.parseLong(v)).isPositive());
    }

    @Test
    void rocketmq_inProcess_unguardedDoubleCharges_everyGuardHolds() throws Exception {
        Map<String, Object> json = lab("rocketmq");

        assertThat(json).containsEntry("broker", "rocketmq");
        LabRunTest.assertEveryGuardHeld_andTheUnguardedDoubleCharged(json);
        Map<String, String> injected = injected(json);
        assertThat(injected)
                .hasEntrySatisfying(
                        "consumeTimeout, sent back while handled (2.0%)",
                        v -> assertThat(v).startsWith("n/a on rocketmq"))
                .hasEntrySatisfying(
                        "consumer stopped after DB commit, before the offset is persisted (1.0%)",
                        v -> assertThat(Long.parseLong(v)).isPositive())
                .hasEntrySatisfying(
                        "client retry after a lost send answer (same msgId) (4.0%)",
                        v -> assertThat(Long.parseLong(v)).isPositive());
    }

    @Test
    void nats_unguardedDoubleCharges_everyGuardHolds() throws Exception {
        Map<String, Object> json = lab("nats", "--nats-url", TestServers.nats().url());

        assertThat(json).containsEntry("broker", "nats");
        LabRunTest.assertEveryGuardHeld_andTheUnguardedDoubleCharged(json);
        Map<String, String> injected = injected(json);
        assertThat(injected)
                .hasEntrySatisfying(
                        "AckWait expired while handled, redelivered (2.0%)",
                        v -> assertThat(v).startsWith("n/a on nats"));
    }

    @SuppressWarnings("unchecked")
    private static Map<String, String> injected(Map<String, Object> json) {
        Map<String, String> byLabel = new java.util.LinkedHashMap<>();
        for (Map<String, Object> e : (List<Map<String, Object>>) json.get("injected")) {
            byLabel.put((String) e.get("label"), (String) e.get("value"));
        }
        return byLabel;
    }

    private Map<String, Object> lab(String broker, String... serverOption) throws Exception {
        List<String> args = new java.util.ArrayList<>(List.of(
                "--broker",
                broker,
                "--orders",
                "200",
                "--jdbc-url",
                "jdbc:h2:mem:lab" + broker + ";DB_CLOSE_DELAY=-1;LOCK_TIMEOUT=10000",
                "--no-redis",
                "--producer-retry-rate",
                "0.04",
                "--app-resend-rate",
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
                out.toString()));
        args.addAll(List.of(serverOption));
        ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        int status = Main.run(
                args.toArray(String[]::new),
                new PrintStream(stdout, true, StandardCharsets.UTF_8),
                new PrintStream(stderr, true, StandardCharsets.UTF_8));
        String printed = stdout.toString(StandardCharsets.UTF_8);
        assertThat(status).as(printed + stderr.toString(StandardCharsets.UTF_8)).isZero();
        assertThat(printed).contains("PASSED", "DAMAGED (expected)");
        assertThat(Files.readString(out.resolve("idem-lab-report.html"), StandardCharsets.UTF_8))
                .contains("Over " + broker + ":");
        return LabRunTest.report(out);
    }
}
