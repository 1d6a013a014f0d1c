package dev.idem.demo;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A consumer lab run: the broker and the database, N copies of the user's consumer, the payment stream with its
 * duplicates and the faults, the drain, and the verdict by the user's SQL against the payments sent.
 */
final class ConsumerLab {
    private final ConsumerLabOptions options;
    private final PrintStream out;
    private final FaultLog log = new FaultLog();

    ConsumerLab(ConsumerLabOptions options, PrintStream out) {
        this.options = options;
        this.out = out;
    }

    ConsumerLabResult run() throws Exception {
        long start = System.nanoTime();
        Files.createDirectories(options.out());
        String tag = "r" + LabBroker.runSuffix();
        H2Server h2 = options.jdbcUrl().isPresent()
                ? null
                : H2Server.start(options.out().toAbsolutePath());
        try (LabDatabase db = LabDatabase.connect(h2 == null ? options.jdbcUrl().get() : h2.url(), 4);
                ConsumerLabBroker broker = startBroker(tag)) {
            return run(db, broker, tag, start);
        } finally {
            if (h2 != null) {
                h2.close();
            }
        }
    }

    private ConsumerLabBroker startBroker(String tag) throws Exception {
        if (options.broker().equals("nats")) {
            return new NatsConsumerLabBroker(options.natsUrl(), tag);
        }
        if (options.broker().equals("rabbitmq")) {
            return new RabbitConsumerLabBroker(options.rabbitmqUrl(), tag);
        }
        if (options.broker().equals("rocketmq")) {
            say("starting an in-process RocketMQ name server and broker ...");
            return new RocketMqConsumerLabBroker(options.partitions(), tag);
        }
        options.kafkaBootstrap().ifPresent(KafkaLabBroker::check);
        say("starting " + (options.kafkaBootstrap().isPresent() ? "" : "an in-process ") + "Kafka broker ...");
        return new KafkaConsumerLabBroker(options.kafkaBootstrap().orElse(null), options.partitions(), tag);
    }

    private ConsumerLabResult run(LabDatabase db, ConsumerLabBroker broker, String tag, long start) throws Exception {
        List<LabResult.Entry> env = new ArrayList<>();
        env.add(new LabResult.Entry("database", db.product() + " at " + db.url()));
        broker.prepare();
        env.addAll(broker.environment());
        DatabaseBackends backends = new DatabaseBackends(db, "idem-lab-" + tag);
        EffectsQuery effects = new EffectsQuery(db, options.effectsSql().orElse(null));
        effects.prepare();
        env.add(new LabResult.Entry(
                "effects", effects.sql() + (effects.convention() ? " (the lab's ledger convention)" : "")));
        Set<String> before = idsBefore(effects);

        Map<String, String> placeholders = new LinkedHashMap<>(broker.placeholders());
        placeholders.put("jdbcUrl", backends.consumerUrl(db.rawUrl()));
        placeholders.put("java", javaCommand());
        placeholders.put("classpath", System.getProperty("java.class.path"));
        placeholders.put("instance", "1");
        PaymentWorkload workload = PaymentWorkload.generate(options.shape(), tag, options.seed());
        try (ConsumerProcesses processes = new ConsumerProcesses(
                options.command(), placeholders, options.consumers(), options.out(), log, options.seed())) {
            env.add(new LabResult.Entry(
                    "consumer command (copy 1)", LabDatabase.redact(processes.displayCommandOf(1))));
            say("starting " + options.consumers() + " consumer(s): "
                    + LabDatabase.redact(processes.displayCommandOf(1)));
            processes.start();
            awaitReady(broker, processes);
            createAccounts(db, workload);
            AtomicLong lastGrowth = new AtomicLong(System.nanoTime());
            EffectWatch watch = new EffectWatch(effects, lastGrowth);
            watch.start();
            FaultInjector faults = new FaultInjector(
                    processes,
                    backends,
                    log,
                    lastGrowth::get,
                    workload.durationMillis(),
                    options.kills(),
                    options.dbKills(),
                    options.seed());
            backends.unavailable()
                    .ifPresent(why -> env.add(new LabResult.Entry("database sessions ended", "n/a: " + why)));
            Thread faultThread = new Thread(faults, "idem-lab-faults");
            faultThread.setDaemon(true);
            say(String.format(
                    Locale.ROOT,
                    "sending %,d payments as %,d messages over %.1f s, with faults ...",
                    workload.payments().size(),
                    workload.sends().size(),
                    workload.durationMillis() / 1000.0));
            faultThread.start();
            send(broker, workload);
            faults.stop();
            faultThread.join();
            processes.restartWaiting();
            log.add("stream end", "every copy sent; faults stopped, waiting for the drain");
            say("stream sent; waiting for the drain (at most " + options.drainSeconds() + " s) ...");
            long drainStart = System.nanoTime();
            boolean drained = awaitDrain(broker, effects, processes);
            double drainSeconds = (System.nanoTime() - drainStart) / 1e9;
            watch.stop();
            log.add(drained ? "drained" : "never drained", String.format(Locale.ROOT, "after %.1f s", drainSeconds));
            EffectsVerdict verdict = EffectsVerdict.of(workload.payments(), effects.rows(), before);
            return new ConsumerLabResult(
                    broker.id(),
                    options.command().template(),
                    options.consumers(),
                    env,
                    workloadEntries(workload),
                    log.events(),
                    effects.sql(),
                    verdict,
                    workload.copiesOf(verdict.doubled()),
                    drained,
                    drainSeconds,
                    (System.nanoTime() - start) / 1e9);
        }
    }

    /** Payment ids the effects query returns before the run: not this run's, left out of the verdict. */
    private Set<String> idsBefore(EffectsQuery effects) {
        try {
            Set<String> ids = new HashSet<>();
            effects.rows().forEach(r -> ids.add(r.paymentId()));
            return ids;
        } catch (SQLException e) {
            log.add(
                    "note",
                    "the effects query fails before the run (" + LabDatabase.rootMessage(e)
                            + "): taken as no effect yet (a consumer that creates its tables at start)");
            return Set.of();
        }
    }

    private void awaitReady(ConsumerLabBroker broker, ConsumerProcesses processes) throws InterruptedException {
        long deadline = System.nanoTime() + options.readySeconds() * 1_000_000_000L;
        long since = System.nanoTime();
        while (System.nanoTime() < deadline) {
            try {
                if (broker.consumersReady(options.consumers())) {
                    long joined = System.nanoTime() - since;
                    processes.joinedAfter(joined);
                    log.add("ready", String.format(Locale.ROOT, "the consumers joined after %.1f s", joined / 1e9));
                    return;
                }
            } catch (Exception e) {
                // the group or consumer is not there yet
            }
            Thread.sleep(200);
        }
        processes.joinedAfter(System.nanoTime() - since);
        log.add("ready", "not every consumer joined within " + options.readySeconds() + " s: sending anyway");
    }

    private void createAccounts(LabDatabase db, PaymentWorkload workload) throws Exception {
        if (options.accountSql().isEmpty()) {
            return;
        }
        Set<String> accounts = new TreeSet<>();
        workload.payments().forEach(p -> accounts.add(p.account()));
        long deadline = System.nanoTime() + options.readySeconds() * 1_000_000_000L;
        while (true) {
            try (Connection c = db.dataSource().getConnection();
                    PreparedStatement ps =
                            c.prepareStatement(options.accountSql().get())) {
                for (String a : accounts) {
                    ps.setString(1, a);
                    ps.executeUpdate();
                }
                log.add("accounts", accounts.size() + " created by --account-sql");
                return;
            } catch (SQLException e) {
                if (System.nanoTime() > deadline) {
                    throw new LabOptions.BadOptionException("--account-sql fails: " + LabDatabase.rootMessage(e)
                            + ": fix the statement, or see in consumer-1.log in " + options.out()
                            + " whether the consumers started (" + log.count("exit") + " exits on their own)");
                }
                Thread.sleep(500);
            }
        }
    }

    private void send(ConsumerLabBroker broker, PaymentWorkload workload) throws Exception {
        long start = System.nanoTime();
        for (PaymentWorkload.Send s : workload.sends()) {
            long wait = s.atMillis() - (System.nanoTime() - start) / 1_000_000L;
            if (wait > 0) {
                broker.flush();
                Thread.sleep(wait);
            }
            broker.send(s);
        }
        broker.flush();
    }

    /**
     * Nothing unacknowledged in the broker, and for the settle time the effect count unchanged and every copy
     * running without a start or exit (a copy that crashes in a loop, or a broker that cannot count unacked
     * deliveries, never passes for drained).
     */
    private boolean awaitDrain(ConsumerLabBroker broker, EffectsQuery effects, ConsumerProcesses processes)
            throws InterruptedException {
        long deadline = System.nanoTime() + options.drainSeconds() * 1_000_000_000L;
        long settle = options.settleSeconds() * 1_000_000_000L;
        long lastCount = -1;
        long stableSince = System.nanoTime();
        while (System.nanoTime() < deadline) {
            try {
                long backlog = broker.backlog();
                long count = effects.count();
                boolean steady = processes.running() == processes.count()
                        && System.nanoTime() - processes.lastChangeNanos() >= settle;
                if (count != lastCount || backlog > 0 || !steady) {
                    lastCount = count;
                    stableSince = System.nanoTime();
                } else if (System.nanoTime() - stableSince >= settle) {
                    return true;
                }
            } catch (Exception e) {
                stableSince = System.nanoTime();
            }
            Thread.sleep(250);
        }
        return false;
    }

    private static List<LabResult.Entry> workloadEntries(PaymentWorkload w) {
        List<LabResult.Entry> entries = new ArrayList<>();
        entries.add(new LabResult.Entry(
                "payments (the truth)", Long.toString(w.payments().size())));
        entries.add(new LabResult.Entry("messages sent", Long.toString(w.sends().size())));
        for (PaymentWorkload.Copy c : PaymentWorkload.Copy.values()) {
            if (c != PaymentWorkload.Copy.ORIGINAL) {
                entries.add(new LabResult.Entry(c.label, Long.toString(w.count(c))));
            }
        }
        entries.add(new LabResult.Entry(
                "stream duration (bursts and quiet periods)",
                String.format(Locale.ROOT, "%.1f s", w.durationMillis() / 1000.0)));
        return entries;
    }

    private static String javaCommand() {
        return ProcessHandle.current()
                .info()
                .command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    }

    private void say(String line) {
        if (!options.quiet()) {
            out.println("  " + line);
        }
    }
}
