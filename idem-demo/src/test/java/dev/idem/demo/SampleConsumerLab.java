package dev.idem.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.testsupport.EmbeddedKafka;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestServers;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/**
 * The consumer lab run on the sample consumers it ships (two or three copies, see {@link #SAMPLES_NEEDING_THREE}, each
 * a JVM of its own, killed with {@code kill -9}, their PostgreSQL sessions ended mid-run), one schema per run: the lab
 * creates its ledger afresh at each run. Its test classes, one per broker, judge the samples as they must be judged: no
 * dedup doubles, committing before the effect loses, check-then-act doubles from the copies sent at the same moment
 * only, the {@code JdbcInbox} consumer passes. A class's runs go three at a time (the check-then-act run alone): each
 * has its own schema, topic or queue, consumer processes and database sessions to end, and most of a run waits (for
 * the paced stream, for the consumers to join, for the drain to settle). Kafka runs on the JVM's shared broker
 * (LabRunTest runs the lab's own in-process one).
 */
@Execution(ExecutionMode.CONCURRENT)
abstract class SampleConsumerLab {
    private static final String KAFKA_ARGS = "--broker kafka --server {bootstrap} --topic {topic} --group {group}";
    private static final String RABBIT_ARGS = "--broker rabbitmq --server {amqpUrl} --queue {queue}";
    private static final String ROCKETMQ_ARGS = "--broker rocketmq --server {namesrv} --topic {topic} --group {group}";
    private static final String NATS_ARGS = "--broker nats --server {natsUrl} --stream {stream} --group {group}"
            + " --dead-letter-subject {deadLetterSubject}";

    /**
     * A check-then-act consumer doubles only where two consumers fetch the same payment at the same moment: runs beside
     * it stretch those moments apart (its Kafka self-test once found no double with three runs at a time).
     */
    private static final ReadWriteLock RUNS = new ReentrantReadWriteLock();

    /**
     * Copies sent at the same moment to two consumers, for the check-then-act run: its double needs two consumers in
     * the window between its check and its write at once, and 33 such copies of 240 payments once gave none in CI.
     */
    private static final String CHECK_THEN_ACT_CROSS_RATE = "0.5";

    /**
     * The samples run with three copies, the others with two: check-then-act doubles only when two copies fetch one
     * payment while a third keeps the stream moving, and commit-first loses only when a kill lands between the commit
     * and the write (two copies, killed one at a time, once gave no loss on RabbitMQ in a CI run).
     */
    private static final Set<String> SAMPLES_NEEDING_THREE = Set.of("CheckThenActConsumer", "CommitFirstConsumer");

    @TempDir
    Path out;

    /** The broker the test class runs the samples on: kafka, nats, rabbitmq or rocketmq. */
    abstract String broker();

    /**
     * The lab run on the sample consumer class {@code sample} of {@code dev.idem.demo.samples}; the check-then-act
     * sample's run alone (see {@link #RUNS}).
     */
    Lab judge(String sample) throws Exception {
        Lock turn = sample.equals("CheckThenActConsumer") ? RUNS.writeLock() : RUNS.readLock();
        turn.lock();
        try (TestDatabase db = TestDatabase.postgres(getClass().getSimpleName())) {
            return judge(sample, db);
        } finally {
            turn.unlock();
        }
    }

    private Lab judge(String sample, TestDatabase db) throws Exception {
        String broker = broker();
        List<String> args = new ArrayList<>();
        String brokerArgs = KAFKA_ARGS;
        if (broker.equals("kafka")) {
            args.addAll(List.of("--kafka-bootstrap", EmbeddedKafka.shared().bootstrapServers()));
        } else if (broker.equals("nats")) {
            args.addAll(
                    List.of("--broker", "nats", "--nats-url", TestServers.nats().url()));
            brokerArgs = NATS_ARGS;
        } else if (broker.equals("rocketmq")) {
            args.addAll(List.of("--broker", "rocketmq"));
            brokerArgs = ROCKETMQ_ARGS;
        } else if (broker.equals("rabbitmq")) {
            args.addAll(List.of(
                    "--broker",
                    "rabbitmq",
                    "--rabbitmq-url",
                    TestServers.rabbitmq().url()));
            brokerArgs = RABBIT_ARGS;
        }
        args.addAll(List.of(
                "--consumer-cmd",
                "{java} -Xmx128m -XX:TieredStopAtLevel=1 -Dorg.slf4j.simpleLogger.defaultLogLevel=warn"
                        + " -cp {classpath} dev.idem.demo.samples." + sample + " "
                        + brokerArgs + " --jdbc {jdbcUrl}",
                "--jdbc-url",
                db.url(),
                "--consumers",
                SAMPLES_NEEDING_THREE.contains(sample) ? "3" : "2",
                "--payments",
                "240",
                "--cross-rate",
                sample.equals("CheckThenActConsumer") ? CHECK_THEN_ACT_CROSS_RATE : "0.1",
                "--db-kills",
                "2",
                "--settle",
                "3",
                "--ready-timeout",
                "90",
                "--drain-timeout",
                "150"));
        return run(args, out);
    }

    static Lab run(List<String> args, Path out) throws Exception {
        List<String> all = new ArrayList<>(args);
        all.addAll(List.of("--quiet", "--out", out.toString()));
        ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        ByteArrayOutputStream stderr = new ByteArrayOutputStream();
        int status = Main.run(
                all.toArray(String[]::new),
                new PrintStream(stdout, true, StandardCharsets.UTF_8),
                new PrintStream(stderr, true, StandardCharsets.UTF_8));
        String printed = stdout.toString(StandardCharsets.UTF_8) + stderr.toString(StandardCharsets.UTF_8);
        assertThat(out.resolve("idem-lab-report.json"))
                .as(() -> printed + labLog(out))
                .exists();
        assertThat(Files.readString(out.resolve("idem-lab-report.html"), StandardCharsets.UTF_8))
                .contains("Idem consumer lab", "The verdict")
                .doesNotContain("<script", "src=\"http", "href=\"http");
        return new Lab(status, printed, LabRunTest.report(out));
    }

    /** The end of the lab's own log, for a run that failed: the temporary directory it is in goes with the test. */
    private static String labLog(Path out) {
        try {
            List<String> lines = Files.readAllLines(out.resolve("idem-lab.log"), StandardCharsets.UTF_8);
            return "\nthe end of idem-lab.log:\n"
                    + String.join("\n", lines.subList(Math.max(0, lines.size() - 150), lines.size()));
        } catch (IOException e) {
            return "\n(no idem-lab.log: " + e + ")";
        }
    }

    /** A finished lab run: its exit status, what it printed, its JSON report. */
    record Lab(int status, String printed, Map<String, Object> json) {
        long number(String key) {
            return Math.round((double) json.get(key));
        }

        @SuppressWarnings("unchecked")
        long faults(String kind) {
            return Math.round((double) ((Map<String, Object>) json.get("faults")).get(kind));
        }

        @SuppressWarnings("unchecked")
        void assertDoublesOnlyFromSimultaneousCopies() {
            assertThat(number("double")).as(printed).isPositive();
            assertThat(number("lost")).as(printed).isZero();
            // A check-then-act consumer finds a row written before it looked: a redelivery after a kill, a late
            // resend. Only a copy sent at the same moment (CROSS; on NATS the RESEND right after, next in the
            // stream, too) reaches a second consumer before the first one wrote.
            assertThat(((Map<String, Object>) json.get("doubles_by_copies")).keySet())
                    .as("the extra copies of every doubled payment: " + printed)
                    .allSatisfy(
                            copies -> assertThat(List.of(copies.split("\\+"))).containsAnyOf("CROSS", "RESEND"));
        }

        void assertPassedUnderEveryFault() {
            assertThat(status).as(printed).isZero();
            assertThat(json).containsEntry("passed", true).containsEntry("drained", true);
            assertThat(number("double") + number("lost") + number("unknown") + number("account_mismatches"))
                    .isZero();
            assertThat(faults("kill -9")).as(printed).isPositive();
            assertThat(faults("database sessions ended")).as(printed).isPositive();
        }
    }
}
