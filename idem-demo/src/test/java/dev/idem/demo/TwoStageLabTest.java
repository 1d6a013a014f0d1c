package dev.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.testsupport.EmbeddedKafka;
import dev.idem.testsupport.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/**
 * The two-stage flow ({@code --flow two-stage}, issue 25) on PostgreSQL and the in-process Kafka: payments (inbox +
 * outbox), relay and shipping processes, two of each, {@code kill -9}ed and crashed right after their effects. With
 * both inboxes the SQL verdict passes; with the shipping service unguarded it finds events applied twice (the
 * redeliveries after its crashes, the republications after the relay's), while stage one stays clean. The two runs go
 * at once, each on a schema of its own: most of a run waits (for the processes to join, for the drain to settle).
 */
@Execution(ExecutionMode.CONCURRENT)
class TwoStageLabTest {
    @TempDir
    Path out;

    @Test
    void bothStagesGuarded_everyOrderPaidOnce_everyEventAppliedOnce_inOrder() throws Exception {
        Run run = run();

        assertThat(run.status).as(run.printed).isZero();
        assertThat(run.json).containsEntry("passed", true).containsEntry("drained", true);
        assertThat(run.counts().values()).as(run.printed).allMatch(n -> n == 0.0);
        assertThat(run.number("crashes") + run.number("kills"))
                .as("faults made")
                .isPositive();
    }

    @Test
    void shippingWithoutItsInbox_isFoundApplyingEventsTwice() throws Exception {
        Run run = run("--stage-two-guard", "none");

        assertThat(run.status).as(run.printed).isEqualTo(1);
        assertThat(run.counts().get("orders shipped twice")).as(run.printed).isPositive();
        assertThat(run.counts().get("events applied twice")).isPositive();
        assertThat(run.counts().get("orders paid twice"))
                .as("stage one keeps its inbox")
                .isZero();
        assertThat(run.counts().get("orders never paid")).isZero();
    }

    private Run run(String... extra) throws Exception {
        try (TestDatabase db = TestDatabase.postgres("TwoStageLabTest")) {
            return run(db, extra);
        }
    }

    private Run run(TestDatabase db, String... extra) throws Exception {
        List<String> args = new ArrayList<>(List.of(
                "--flow",
                "two-stage",
                "--orders",
                "80",
                "--customers",
                "12",
                "--kafka-bootstrap",
                EmbeddedKafka.shared().bootstrapServers(),
                "--jdbc-url",
                db.url(),
                "--quiet",
                "--out",
                out.toString()));
        args.addAll(List.of(extra));
        ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        int status = Main.run(
                args.toArray(String[]::new),
                new PrintStream(stdout, true, StandardCharsets.UTF_8),
                new PrintStream(stdout, true, StandardCharsets.UTF_8));
        String printed = stdout.toString(StandardCharsets.UTF_8);
        Path report = out.resolve("idem-two-stage-report.json");
        assertThat(report).as(printed).exists();
        @SuppressWarnings("unchecked")
        Map<String, Object> json = (Map<String, Object>) Json.parse(Files.readString(report, StandardCharsets.UTF_8));
        return new Run(status, printed, json);
    }

    private record Run(int status, String printed, Map<String, Object> json) {
        @SuppressWarnings("unchecked")
        Map<String, Double> counts() {
            return (Map<String, Double>) json.get("counts");
        }

        long number(String key) {
            return Math.round((double) json.get(key));
        }
    }
}
