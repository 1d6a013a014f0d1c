package dev.idem.demo;

import dev.idem.redis.RedisStore;
import dev.idem.testsupport.EmbeddedKafka;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
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
            EmbeddedKafka broker = null;
            try {
                String bootstrap;
                String produceBootstrap;
                if (options.kafkaBootstrap().isPresent()) {
                    bootstrap = options.kafkaBootstrap().get();
                    produceBootstrap = bootstrap;
                    checkKafka(bootstrap);
                    header();
                    env.add(new LabResult.Entry("kafka", "external broker at " + bootstrap));
                } else {
                    header();
                    out.println("  starting an in-process Kafka broker ...");
                    broker = EmbeddedKafka.start(true, Map.of());
                    bootstrap = broker.bootstrapServers();
                    produceBootstrap = broker.proxiedBootstrapServers();
                    env.add(new LabResult.Entry(
                            "kafka", "in-process KRaft broker at " + bootstrap + " (producer through a TCP proxy)"));
                }
                env.add(new LabResult.Entry(
                        "lease stores",
                        redisUrl == null
                                ? "in-memory"
                                        + (options.noRedis()
                                                ? " (Redis off: --no-redis)"
                                                : " (no Redis on 127.0.0.1:6379)")
                                : "in-memory and Redis at " + redisUrl));
                return consume(db, broker, bootstrap, produceBootstrap, redisUrl, env, start);
            } finally {
                if (broker != null) {
                    broker.close();
                }
            }
        }
    }

    private void header() {
        out.println("idem double-charge lab: " + options.orders() + " orders, seed " + options.seed() + ", output in "
                + options.out());
    }

    private LabResult consume(
            LabDatabase db,
            @Nullable EmbeddedKafka broker,
            String bootstrap,
            String produceBootstrap,
            @Nullable String redisUrl,
            List<LabResult.Entry> env,
            long start)
            throws Exception {
        String topic =
                "idem-lab-orders-" + Long.toString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE, 36);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, options.partitions(), (short) 1)))
                    .all()
                    .get(30, TimeUnit.SECONDS);
            env.add(new LabResult.Entry("topic", topic + " (" + options.partitions() + " partitions)"));

            List<Strategy> strategies = new ArrayList<>();
            strategies.add(Strategies.none(db));
            strategies.add(Strategies.inbox(db));
            strategies.add(Strategies.leaseInMemory(db));
            if (redisUrl != null) {
                String prefix =
                        "idem-lab-" + Long.toString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE, 36);
                RedisStore store = RedisStore.builder(redisUrl).prefix(prefix).build();
                strategies.add(Strategies.lease(
                        "lease_redis", "lease store, Redis (Guard + RedisStore, prefix " + prefix + ")", store, db));
            }
            strategies.add(Strategies.stateMachine(db));
            strategies.add(Strategies.version(db));
            try {
                return runStrategies(db, admin, broker, produceBootstrap, bootstrap, topic, strategies, env, start);
            } finally {
                strategies.forEach(Strategy::close);
            }
        }
    }

    private LabResult runStrategies(
            LabDatabase db,
            Admin admin,
            @Nullable EmbeddedKafka broker,
            String produceBootstrap,
            String bootstrap,
            String topic,
            List<Strategy> strategies,
            List<LabResult.Entry> env,
            long start)
            throws Exception {
        LabOptions.Faults f = options.faults();
        OrderFlow flow =
                OrderFlow.generate(options.orders(), options.partitions(), f.cancel(), f.reorder(), options.seed());
        List<String> prefixes = strategies.stream().map(Strategy::prefix).toList();
        db.createSchema(prefixes);
        List<NewTopic> deadLetterTopics = new ArrayList<>();
        for (Strategy s : strategies) {
            deadLetterTopics.add(new NewTopic(StrategyRun.deadLetterTopic(topic, s), 1, (short) 1));
        }
        admin.createTopics(deadLetterTopics).all().get(30, TimeUnit.SECONDS);
        db.load(flow, prefixes);

        FlowProducer producer = new FlowProducer(produceBootstrap, broker == null ? null : broker.proxy(), topic);
        long publishStart = System.nanoTime();
        progress.start("publishing the flow", flow.sends().size());
        FlowProducer.Published published = producer.publish(flow, f, progress::update);
        progress.finish();
        double publishSeconds = (System.nanoTime() - publishStart) / 1e9;

        Map<TopicPartition, Long> end = endOffsets(admin, topic);
        long inTopic = end.values().stream().mapToLong(Long::longValue).sum();

        ConsumerFaults faults = new ConsumerFaults(f, options.seed());
        long timeouts = 0;
        long concurrent = 0;
        long crashes = 0;
        for (OrderFlow.Send s : flow.sends()) {
            switch (faults.of(s.event().key())) {
                case TIMEOUT -> timeouts++;
                case CONCURRENT -> concurrent++;
                case CRASH -> crashes++;
                default -> {}
            }
        }
        List<LabResult.Entry> injected = new ArrayList<>();
        injected.add(new LabResult.Entry(
                "messages published (logical)", Long.toString(flow.sends().size())));
        injected.add(new LabResult.Entry("records in the topic", Long.toString(inTopic)));
        injected.add(new LabResult.Entry(
                "extra copies in the topic (producer retries + resends)",
                Long.toString(inTopic - flow.sends().size())));
        injected.add(new LabResult.Entry(
                "producer retry after a lost ack (" + pct(f.producerRetry()) + ")",
                Long.toString(published.clientRetryCopies())));
        injected.add(new LabResult.Entry(
                "application resend after a timeout (" + pct(f.appResend()) + ")",
                Long.toString(published.appResendCopies())));
        injected.add(new LabResult.Entry(
                "consumer timeout, redelivered while handled (" + pct(f.consumerTimeout()) + ")",
                Long.toString(timeouts)));
        injected.add(new LabResult.Entry(
                "same message to two consumers at once (" + pct(f.concurrent()) + ")", Long.toString(concurrent)));
        injected.add(new LabResult.Entry(
                "crash after DB commit, before offset commit (" + pct(f.crash()) + ")", Long.toString(crashes)));
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
                StrategyRun run = new StrategyRun(s, bootstrap, topic, end, faults, secondConsumer, admin);
                runs.add(run);
                futures.add(runners.submit(() -> run.run(deadline)));
            }
            long consumeStart = System.nanoTime();
            long total = inTopic * strategies.size();
            progress.start("consuming (" + strategies.size() + " groups)", total);
            while (!futures.stream().allMatch(Future::isDone)) {
                Thread.sleep(200);
                progress.update(
                        runs.stream().mapToLong(StrategyRun::committedRecords).sum());
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
                    endOffsets(admin, run.deadLetterTopic()).values().stream()
                            .mapToLong(Long::longValue)
                            .sum(),
                    inTopic,
                    run.elapsed().toNanos() / 1e9));
        }
        return new LabResult(
                env,
                injected,
                results,
                flow.orders().size(),
                flow.paidOrders(),
                flow.sends().size(),
                inTopic,
                (System.nanoTime() - start) / 1e9);
    }

    private static Map<TopicPartition, Long> endOffsets(Admin admin, String topic) throws Exception {
        int partitions = admin.describeTopics(List.of(topic))
                .allTopicNames()
                .get(30, TimeUnit.SECONDS)
                .get(topic)
                .partitions()
                .size();
        Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            request.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        Map<TopicPartition, Long> end = new HashMap<>();
        admin.listOffsets(request).all().get(30, TimeUnit.SECONDS).forEach((tp, info) -> end.put(tp, info.offset()));
        return end;
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

    private static void checkKafka(String bootstrap) {
        Map<String, Object> props = Map.of(
                AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5000,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 8000);
        try (Admin admin = Admin.create(props)) {
            admin.describeCluster().nodes().get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new LabOptions.BadOptionException("Kafka does not answer at " + bootstrap + " ("
                    + LabDatabase.rootMessage(e) + "): start it or fix --kafka-bootstrap, or leave it out to use the"
                    + " in-process broker");
        }
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
