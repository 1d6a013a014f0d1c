package dev.idem.demo;

import dev.idem.demo.ConsumerFaults.Fault;
import dev.idem.redis.RedisStore;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import org.jspecify.annotations.Nullable;

/** One lab run: set up, publish the flow with its faults, consume it once per strategy, verify with SQL. */
final class Lab {
    private static final Duration CONSUME_DEADLINE = Duration.ofMinutes(10);

    private final LabOptions options;
    private final PrintStream out;
    private final Progress progress;

    Lab(LabOptions options, PrintStream out, PrintStream progressOut) {
        this.options = options;
        this.out = out;
        this.progress = new Progress(progressOut, !options.quiet());
    }

    LabResult run() throws Exception {
        long start = System.nanoTime();
        Files.createDirectories(options.out());
        List<LabResult.Entry> env = new ArrayList<>();
        String jdbcUrl = options.jdbcUrl()
                .orElse("jdbc:h2:file:" + options.out().toAbsolutePath().resolve("idem-lab-db")
                        + ";LOCK_TIMEOUT=10000");
        String redisUrl = redisUrl();
        try (LabDatabase db = LabDatabase.connect(jdbcUrl, 24)) {
            env.add(new LabResult.Entry(
                    "database",
                    db.product() + (options.jdbcUrl().isPresent() ? "" : " (embedded, file)") + " at " + db.url()));
            try (LabBroker broker = LabBrokers.start(options, out, this::header)) {
                env.addAll(broker.environment());
                env.add(new LabResult.Entry(
                        "lease stores",
                        redisUrl == null
                                ? "in-memory"
                                        + (options.noRedis()
                                                ? " (Redis off: --no-redis)"
                                                : " (no Redis on 127.0.0.1:6379)")
                                : "in-memory and Redis at " + redisUrl));
                return consume(db, broker, redisUrl, env, start);
            }
        }
    }

    private void header() {
        out.println("idem double-charge lab: " + options.orders() + " orders, seed " + options.seed() + ", output in "
                + options.out());
    }

    private LabResult consume(
            LabDatabase db, LabBroker broker, @Nullable String redisUrl, List<LabResult.Entry> env, long start)
            throws Exception {
        List<Strategy> strategies = new ArrayList<>();
        strategies.add(Strategies.none(db));
        strategies.add(Strategies.inbox(db));
        strategies.add(Strategies.leaseInMemory(db));
        if (redisUrl != null) {
            String prefix = "idem-lab-" + LabBroker.runSuffix();
            RedisStore store = RedisStore.builder(redisUrl).prefix(prefix).build();
            strategies.add(Strategies.lease(
                    "lease_redis", "lease store, Redis (Guard + RedisStore, prefix " + prefix + ")", store, db));
        }
        strategies.add(Strategies.stateMachine(db));
        strategies.add(Strategies.version(db));
        try {
            return runStrategies(db, broker, strategies, env, start);
        } finally {
            strategies.forEach(Strategy::close);
        }
    }

    private LabResult runStrategies(
            LabDatabase db, LabBroker broker, List<Strategy> strategies, List<LabResult.Entry> env, long start)
            throws Exception {
        LabOptions.Faults f = options.faults();
        OrderFlow flow =
                OrderFlow.generate(options.orders(), options.partitions(), f.cancel(), f.reorder(), options.seed());
        List<String> prefixes = strategies.stream().map(Strategy::prefix).toList();
        broker.prepare(strategies);
        db.createSchema(prefixes);
        db.load(flow, prefixes);

        long publishStart = System.nanoTime();
        progress.start("publishing the flow", flow.sends().size());
        FlowProducer.Published published = broker.publish(flow, f, progress::update);
        progress.finish();
        double publishSeconds = (System.nanoTime() - publishStart) / 1e9;
        long inTopic = broker.storedCopies();

        ConsumerFaults faults = new ConsumerFaults(f, options.seed(), broker);
        Map<Fault, Long> injectedFaults = new EnumMap<>(Fault.class);
        for (OrderFlow.Send s : flow.sends()) {
            injectedFaults.merge(faults.of(s.event().key()), 1L, Long::sum);
        }
        List<LabResult.Entry> injected = new ArrayList<>();
        injected.add(new LabResult.Entry(
                "messages published (logical)", Long.toString(flow.sends().size())));
        injected.add(new LabResult.Entry("records in the topic", Long.toString(inTopic)));
        injected.add(new LabResult.Entry(
                "extra copies in the topic (producer retries + resends)",
                Long.toString(inTopic - flow.sends().size())));
        injected.add(new LabResult.Entry(
                published.retryLabel() + " (" + pct(f.producerRetry()) + ")",
                Long.toString(published.clientRetryCopies())));
        injected.add(new LabResult.Entry(
                published.resendLabel() + " (" + pct(f.appResend()) + ")", Long.toString(published.appResendCopies())));
        injected.add(consumerFault(broker, Fault.TIMEOUT, f.consumerTimeout(), injectedFaults));
        injected.add(consumerFault(broker, Fault.CONCURRENT, f.concurrent(), injectedFaults));
        injected.add(consumerFault(broker, Fault.CRASH, f.crash(), injectedFaults));
        injected.add(new LabResult.Entry(
                "reordering: CANCEL before CREATE, SHIP before PAY (" + pct(f.reorder()) + ")",
                Long.toString(flow.reorderedOrders())));
        env.add(new LabResult.Entry("producer duplicates by", published.mechanism()));

        ExecutorService secondConsumer = Executors.newCachedThreadPool(daemon("idem-lab-second-consumer"));
        ExecutorService runners = Executors.newFixedThreadPool(strategies.size(), daemon("idem-lab-consumer"));
        List<StrategyRun> runs = new ArrayList<>();
        try {
            long deadline = System.nanoTime() + CONSUME_DEADLINE.toNanos();
            List<Future<?>> futures = new ArrayList<>();
            for (Strategy s : strategies) {
                StrategyRun run = new StrategyRun(s, broker, faults, secondConsumer);
                runs.add(run);
                futures.add(runners.submit(() -> run.run(deadline)));
            }
            long consumeStart = System.nanoTime();
            long total = inTopic * strategies.size();
            progress.start("consuming (" + strategies.size() + " groups)", total);
            while (!futures.stream().allMatch(Future::isDone)) {
                Thread.sleep(200);
                progress.update(runs.stream().mapToLong(StrategyRun::settled).sum());
            }
            progress.finish();
            for (Future<?> fu : futures) {
                fu.get();
            }
            env.add(new LabResult.Entry(
                    "timings",
                    String.format(
                            Locale.ROOT,
                            "set-up %.1f s, publishing %.1f s, consuming %.1f s (%d groups at once)",
                            (publishStart - start) / 1e9,
                            publishSeconds,
                            (System.nanoTime() - consumeStart) / 1e9,
                            strategies.size())));
        } finally {
            runners.shutdownNow();
            secondConsumer.shutdownNow();
        }

        List<StrategyResult> results = new ArrayList<>();
        for (StrategyRun run : runs) {
            Strategy s = run.strategy();
            results.add(new StrategyResult(
                    s.id(),
                    s.description(),
                    s.guarded(),
                    run.finished(),
                    run.failure().map(LabDatabase::rootMessage).orElse(""),
                    Verification.run(db, s.prefix()),
                    run.deliveries.get(),
                    run.duplicates.get(),
                    run.retries.get(),
                    run.crashes.get(),
                    run.secondCopies.get(),
                    broker.deadLetters(s),
                    inTopic,
                    run.elapsed().toNanos() / 1e9));
        }
        return new LabResult(
                broker.id(),
                env,
                injected,
                results,
                flow.orders().size(),
                flow.paidOrders(),
                flow.sends().size(),
                inTopic,
                (System.nanoTime() - start) / 1e9);
    }

    /** A consumer-side fault's line: its count, or why the broker cannot produce it. */
    private static LabResult.Entry consumerFault(LabBroker broker, Fault fault, double rate, Map<Fault, Long> counts) {
        String label = broker.label(fault) + " (" + pct(rate) + ")";
        return broker.unavailable(fault)
                .map(why -> new LabResult.Entry(label, "n/a on " + broker.id() + ": " + why))
                .orElseGet(() -> new LabResult.Entry(label, Long.toString(counts.getOrDefault(fault, 0L))));
    }

    private @Nullable String redisUrl() {
        if (options.redisUrl().isPresent()) {
            String url = options.redisUrl().get();
            URI uri = URI.create(url);
            int port = uri.getPort() < 0 ? 6379 : uri.getPort();
            if (uri.getHost() == null || !answers(uri.getHost(), port)) {
                throw new LabOptions.BadOptionException("Redis does not answer at " + LabDatabase.redact(url)
                        + ": start it or fix --redis-url, or leave --redis-url out");
            }
            return url;
        }
        if (!options.noRedis() && answers("127.0.0.1", 6379)) {
            return "redis://127.0.0.1:6379";
        }
        return null;
    }

    static boolean answers(String host, int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static String pct(double rate) {
        return String.format(Locale.ROOT, "%.1f%%", rate * 100);
    }

    private static ThreadFactory daemon(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }
}
