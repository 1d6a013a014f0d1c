package dev.idem.demo;

import dev.idem.demo.samples.TwoStageService;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The two-stage flow ({@code --flow two-stage}, issue 25): orders → payments service (a {@code JdbcInbox}, the
 * payment and its "payment completed" event through the outbox in the mark's transaction) → {@code OutboxRelay}
 * (Kafka publisher) → shipping service (its own inbox). Two processes of each ({@link TwoStageService}), started by
 * {@link ConsumerProcesses}: {@code kill -9} storms while the orders are sent, and each process's in-process crash
 * right after an effect committed (the relay: right after a broker ack, before "sent"). Then the verdict by SQL on
 * both stages' effects and on every event. Exit status 0 pass, 1 failed, 2 bad option, 3 never drained. The run's
 * parts: {@link TwoStageFlow} (topics, tables, orders, services, sending, draining), {@link TwoStageFaults} (the
 * {@code kill -9} storm) and {@link TwoStageVerdict} (the counts and the report).
 */
final class TwoStageLab {
    private static final String[] ROLES = {"payments", "relay", "shipping"};
    private static final int COPIES = 2;

    private final TwoStageOptions options;
    private final PrintStream out;
    private final FaultLog log = new FaultLog();
    private final TwoStageFlow flow;

    private TwoStageLab(TwoStageOptions options, PrintStream out) {
        this.options = options;
        this.out = out;
        this.flow = new TwoStageFlow(options);
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        TwoStageOptions options;
        try {
            options = TwoStageOptions.parse(args, Path.of("").toAbsolutePath());
        } catch (LabOptions.HelpRequested e) {
            out.print(TwoStageOptions.USAGE);
            return 0;
        } catch (LabOptions.BadOptionException e) {
            err.println("idem-lab: " + e.getMessage());
            return 2;
        }
        try {
            Files.createDirectories(options.out());
        } catch (IOException e) {
            err.println("idem-lab: cannot create the output directory " + options.out() + " (" + e.getMessage()
                    + "): pass a writable --out DIR");
            return 2;
        }
        Main.configureLogging(options.out());
        TwoStageVerdict verdict;
        try {
            verdict = new TwoStageLab(options, out).run();
        } catch (LabOptions.BadOptionException e) {
            err.println("idem-lab: " + e.getMessage());
            return 2;
        } catch (Exception e) {
            err.println("idem-lab: the run failed and proves nothing: " + LabDatabase.rootMessage(e) + " (details in "
                    + options.out().resolve("idem-lab.log") + ")");
            org.slf4j.LoggerFactory.getLogger(TwoStageLab.class).error("two-stage run failed", e);
            return 1;
        }
        out.print(verdict.render());
        Path json = options.out().resolve("idem-two-stage-report.json");
        try {
            Files.writeString(json, verdict.json(), StandardCharsets.UTF_8);
            out.println("  report: " + json.toAbsolutePath() + "\n  service output: "
                    + options.out().toAbsolutePath().resolve("<payments|relay|shipping>-<i>.log"));
        } catch (IOException e) {
            err.println("idem-lab: cannot write the report to " + options.out() + ": " + e.getMessage());
            return 1;
        }
        return verdict.exitStatus();
    }

    private TwoStageVerdict run() throws Exception {
        long start = System.nanoTime();
        try (H2Server h2 = options.jdbcUrl().isPresent() ? null : H2Server.start(options.out());
                LabDatabase db = LabDatabase.connect(options.jdbcUrl().orElseGet(() -> h2.url()), 4);
                TwoStageFlow.Kafka kafka =
                        new TwoStageFlow.Kafka(options.kafkaBootstrap().orElse(null))) {
            say("database " + db.product() + " at " + db.url() + "; Kafka at " + kafka.bootstrap);
            flow.createSchema(db);
            kafka.createTopics(flow.ordersTopic, flow.eventsTopic);
            List<String> orders = flow.recordOrders(db);
            List<ConsumerProcesses> services = new ArrayList<>();
            try {
                for (String role : ROLES) {
                    ConsumerProcesses p = new ConsumerProcesses(
                            role,
                            new ConsumerCommand(flow.command(role)),
                            flow.placeholders(db, kafka),
                            COPIES,
                            options.out(),
                            log,
                            options.seed() + role.hashCode());
                    services.add(p);
                    p.start();
                }
                say("started 2 payments, 2 relay and 2 shipping processes ("
                        + (options.stageTwoGuarded() ? "shipping through its inbox" : "shipping WITHOUT its inbox")
                        + ")");
                long sendStart = System.nanoTime();
                TwoStageFaults faults = new TwoStageFaults(options.kills(), options.seed(), services);
                int sentAgain = flow.send(kafka.producer, orders, faults::afterOrder);
                if (sentAgain > 0) {
                    log.add("resend", sentAgain + " orders sent again: the producer reported their sends failed");
                }
                say("sent " + orders.size() + " orders; " + log.count("kill -9") + " kill -9, " + log.count("exit")
                        + " in-process crashes so far");
                double sendSeconds = (System.nanoTime() - sendStart) / 1e9;
                for (ConsumerProcesses p : services) {
                    p.restartWaiting();
                }
                long drainStart = System.nanoTime();
                boolean drained = flow.awaitDrain(db);
                double drainSeconds = (System.nanoTime() - drainStart) / 1e9;
                Map<String, Long> counts = TwoStageVerdict.counts(db, flow.tag, flow.eventsTopic);
                long eventsInTopic = kafka.records(flow.eventsTopic);
                return new TwoStageVerdict(
                        options.orders(),
                        counts,
                        eventsInTopic,
                        log.count("kill -9"),
                        log.count("exit"),
                        drained,
                        sendSeconds,
                        drainSeconds,
                        (System.nanoTime() - start) / 1e9,
                        options.stageTwoGuarded(),
                        log.events());
            } finally {
                services.forEach(ConsumerProcesses::close);
            }
        }
    }

    private void say(String line) {
        if (!options.quiet()) {
            out.println("  " + line);
        }
    }
}
