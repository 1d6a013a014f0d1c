package dev.idem.bench.e2e;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.bench.e2e.Workload.Shape;
import dev.idem.testsupport.CountingSocketFactory;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestDatabase.Engine;
import dev.idem.testsupport.TestServers;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * The end-to-end benchmark: every contender consumes the same at-least-once stream of "debit account A by X for
 * payment P" on real databases, in one run, in interleaved rounds (the order of the contenders rotates every round),
 * and each run is checked with SQL afterwards: balances exact, double effects (ledger rows beyond one per payment),
 * lost messages (payments without a ledger row). A contender that is fast but wrong is reported as wrong.
 *
 * <pre>{@code
 * ./mvnw -q -pl idem-bench -am package -DskipTests
 * java -cp idem-bench/target/benchmarks.jar dev.idem.bench.e2e.EndToEnd --deliveries 20000 --rounds 5
 * }</pre>
 *
 * Servers are found as the tests find them ({@code IDEM_PG_URL}, {@code IDEM_MYSQL_URL}, {@code IDEM_REDIS_URL}, else
 * the default local ports); a server that does not answer is left out, and the report says so. Options (defaults in
 * brackets): {@code --deliveries} [20000], {@code --duplicates} share of copies of earlier payments [0.2], {@code
 * --racing} share of those copies that race their original from a second thread [0.25], {@code --accounts} [100000],
 * {@code --rounds} [5], {@code --scenarios} throughput runs, database:threads
 * [postgresql:1,postgresql:4,mariadb:1,mariadb:4], {@code --pools} the pool kinds every throughput scenario runs on,
 * {@code auto} (connections handed out in auto-commit), {@code manual} or both [auto,manual] (every contender of a
 * scenario shares its pool), {@code --retained} completed marks of other keys in every dedup table during the runs,
 * one scenario per count [0], e.g. {@code 0,10000000} (filled once per table by one statement on the server, kept
 * from run to run; with a count above 0 the report adds the tables' bytes per mark, a purge next to the retained
 * marks while the inbox runs, and Redis memory per mark on a private Redis), {@code --fault-scenarios} runs with
 * faults, once, on the first pool kind and empty tables [postgresql:4,mariadb:4], {@code --handler-failures} [0.01],
 * {@code --crashes-in-handler} [0.0025], {@code --crashes-after-commit} [0.0025], {@code --batch} [100], {@code
 * --batch-deliveries} deliveries of the batched contenders' throughput rounds [10 × {@code --deliveries}], {@code
 * --lease} lease of the lease stores in ms [2000], {@code --contenders} ids to run [all], {@code --no-redis}, {@code
 * --seed} [42], {@code --timeout} per run in s [300], {@code --warmup} deliveries of an untimed first run of every
 * contender on every database, 0 for none [10000], {@code --out} a file for the Markdown report.
 */
public final class EndToEnd {
    /** The names of the contenders' ids in order. */
    static final List<String> ALL = List.of(
            "no-guard",
            "hand",
            "hand-batch",
            "idem-inbox",
            "idem-inbox-batch",
            "idem-state-machine",
            "idem-jdbc-lease",
            "idem-redis",
            "idem-redis-batch",
            "camel-jdbc",
            "si-jdbc",
            "redis-setnx");

    /**
     * One database and thread count, on a pool handing out connections in auto-commit or not (every contender of the
     * scenario shares that pool), with {@code retained} completed marks of other keys in the dedup tables during every
     * run (0: empty tables); with faults or without.
     */
    record Scenario(Engine engine, int threads, boolean faults, boolean autoCommit, int retained) {
        String title() {
            String db = switch (engine) {
                case POSTGRESQL -> "PostgreSQL";
                case MARIADB -> "MariaDB";
                case H2 -> "H2";
            };
            return db + " " + threads + (threads == 1 ? " thread" : " threads")
                    + (autoCommit ? "" : ", manual-commit pool")
                    + (retained == 0 ? "" : String.format(Locale.ROOT, ", %,d retained", retained))
                    + (faults ? ", faults" : "");
        }

        /** The pool this scenario runs on. */
        PoolKey pool() {
            return new PoolKey(engine, retained, autoCommit);
        }
    }

    /**
     * One database and one pool kind (auto-commit connections or not). Each count of retained marks gets a database
     * of its own, so that the empty tables stay empty and the full ones are filled once.
     */
    record PoolKey(Engine engine, int retained, boolean autoCommit) {
        DatabaseKey database() {
            return new DatabaseKey(engine, retained);
        }
    }

    /** A database of the run: one per engine and count of retained marks. */
    record DatabaseKey(Engine engine, int retained) {}

    /** The settings of a benchmark run. */
    record Options(
            Shape shape,
            int rounds,
            List<Scenario> scenarios,
            Set<String> contenders,
            boolean redis,
            Duration lease,
            Duration timeout,
            int batch,
            int batchDeliveries,
            int warmup,
            @Nullable Path out,
            String command) {}

    /** One contender's run in one scenario. */
    record Measurement(
            String contender,
            Scenario scenario,
            int round,
            Runner.Result run,
            Bank.@Nullable Check check,
            Costs costs) {
        boolean correct() {
            return run.finished() && check != null && check.correct() && run.deadLettered() == 0;
        }
    }

    /**
     * What a run cost, as totals over its timed part: round trips on the database connections, CPU time of this JVM,
     * of the database server and of Redis (ns), and the commands Redis processed (server-wide).
     */
    record Costs(long roundTrips, long jvmNanos, long databaseNanos, long redisNanos, long redisCommands) {}

    /** One claims-only run. */
    record ClaimsMeasurement(String contender, int threads, int round, ClaimsOnly.Result result) {}

    /** What a benchmark produced. */
    record Report(
            List<Measurement> measurements, List<ClaimsMeasurement> claims, List<String> skipped, String markdown) {}

    private EndToEnd() {}

    public static void main(String[] args) throws Exception {
        Logger quiet = Logger.getLogger("dev.idem"); // the lease stores warn on every simulated crash
        quiet.setLevel(Level.SEVERE);
        Logger spring = Logger.getLogger("org.springframework");
        spring.setLevel(Level.WARNING);
        Logger lettuce = Logger.getLogger("io.lettuce");
        lettuce.setLevel(Level.WARNING);
        Options options = parse(args);
        Report report = run(options);
        System.out.println(report.markdown());
        if (options.out() != null) {
            Files.writeString(options.out(), report.markdown());
        }
        for (Logger logger : List.of(quiet, spring, lettuce)) {
            logger.setLevel(null);
        }
    }

    static Options parse(String[] args) {
        Map<String, String> given = new LinkedHashMap<>();
        Set<String> flags = new LinkedHashSet<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument '" + a + "'; options start with --");
            }
            if (a.equals("--no-redis")) {
                flags.add(a);
            } else if (i + 1 < args.length) {
                given.put(a, args[++i]);
            } else {
                throw new IllegalArgumentException(a + " needs a value");
            }
        }
        Set<String> known = Set.of(
                "--deliveries",
                "--duplicates",
                "--racing",
                "--accounts",
                "--rounds",
                "--scenarios",
                "--fault-scenarios",
                "--handler-failures",
                "--crashes-in-handler",
                "--crashes-after-commit",
                "--batch",
                "--batch-deliveries",
                "--lease",
                "--contenders",
                "--seed",
                "--timeout",
                "--retained",
                "--pools",
                "--warmup",
                "--out");
        for (String k : given.keySet()) {
            if (!known.contains(k)) {
                throw new IllegalArgumentException("unknown option " + k + "; known: " + known + " and --no-redis");
            }
        }
        Shape shape = new Shape(
                Integer.parseInt(given.getOrDefault("--deliveries", "20000")),
                Double.parseDouble(given.getOrDefault("--duplicates", "0.2")),
                Double.parseDouble(given.getOrDefault("--racing", "0.25")),
                Integer.parseInt(given.getOrDefault("--accounts", "100000")),
                Double.parseDouble(given.getOrDefault("--handler-failures", "0.01")),
                Double.parseDouble(given.getOrDefault("--crashes-in-handler", "0.0025")),
                Double.parseDouble(given.getOrDefault("--crashes-after-commit", "0.0025")),
                Long.parseLong(given.getOrDefault("--seed", "42")));
        List<Boolean> pools = pools(given.getOrDefault("--pools", "auto,manual"));
        List<Integer> retained = new ArrayList<>();
        for (String r : given.getOrDefault("--retained", "0").split(",")) {
            int count = Integer.parseInt(r.strip().replace("_", ""));
            if (count < 0) {
                throw new IllegalArgumentException("--retained counts must be 0 or more, got " + count);
            }
            retained.add(count);
        }
        List<Scenario> scenarios = new ArrayList<>();
        scenarios.addAll(scenarios(
                given.getOrDefault("--scenarios", "postgresql:1,postgresql:4,mariadb:1,mariadb:4"),
                false,
                pools,
                retained));
        scenarios.addAll(scenarios(
                given.getOrDefault("--fault-scenarios", "postgresql:4,mariadb:4"),
                true,
                pools.subList(0, 1),
                List.of(0)));
        Set<String> contenders = new LinkedHashSet<>();
        if (given.containsKey("--contenders")) {
            for (String id : given.get("--contenders").split(",")) {
                if (!ALL.contains(id.strip())) {
                    throw new IllegalArgumentException("unknown contender '" + id + "'; known: " + ALL);
                }
                contenders.add(id.strip());
            }
        } else {
            contenders.addAll(ALL);
        }
        contenders.add("no-guard"); // every ratio is to it
        int rounds = Integer.parseInt(given.getOrDefault("--rounds", "5"));
        if (rounds < 1) {
            throw new IllegalArgumentException("--rounds must be at least 1");
        }
        int batch = Integer.parseInt(given.getOrDefault("--batch", "100"));
        if (batch < 2 || batch > 500) {
            throw new IllegalArgumentException("--batch must be 2 to 500, got " + batch);
        }
        int batchDeliveries =
                Integer.parseInt(given.getOrDefault("--batch-deliveries", String.valueOf(10 * shape.deliveries())));
        if (batchDeliveries < 1) {
            throw new IllegalArgumentException("--batch-deliveries must be 1 or more, got " + batchDeliveries);
        }
        return new Options(
                shape,
                rounds,
                scenarios,
                contenders,
                !flags.contains("--no-redis"),
                Duration.ofMillis(Long.parseLong(given.getOrDefault("--lease", "2000"))),
                Duration.ofSeconds(Long.parseLong(given.getOrDefault("--timeout", "300"))),
                batch,
                batchDeliveries,
                Integer.parseInt(given.getOrDefault("--warmup", "10000")),
                given.containsKey("--out") ? Path.of(given.get("--out")) : null,
                String.join(" ", args));
    }

    /** {@code auto}, {@code manual} or both: the pool kinds every scenario runs on. */
    private static List<Boolean> pools(String spec) {
        List<Boolean> kinds = new ArrayList<>();
        for (String kind : spec.split(",")) {
            switch (kind.strip()) {
                case "auto" -> kinds.add(true);
                case "manual" -> kinds.add(false);
                default ->
                    throw new IllegalArgumentException(
                            "--pools takes auto (connections handed out in auto-commit), manual or auto,manual; got "
                                    + kind);
            }
        }
        return kinds;
    }

    private static List<Scenario> scenarios(
            String spec, boolean faults, List<Boolean> pools, List<Integer> retainedCounts) {
        List<Scenario> list = new ArrayList<>();
        if (spec.isBlank() || spec.equals("none")) {
            return list;
        }
        for (String part : spec.split(",")) {
            String[] dbThreads = part.strip().split(":");
            if (dbThreads.length != 2) {
                throw new IllegalArgumentException("a scenario is database:threads, e.g. postgresql:4; got " + part);
            }
            Engine engine = switch (dbThreads[0].toLowerCase(Locale.ROOT)) {
                case "postgresql", "pg" -> Engine.POSTGRESQL;
                case "mariadb", "mysql" -> Engine.MARIADB;
                case "h2" -> Engine.H2;
                default ->
                    throw new IllegalArgumentException(
                            "database must be postgresql, mariadb or h2; got " + dbThreads[0]);
            };
            int threads = Integer.parseInt(dbThreads[1]);
            if (threads < 1 || threads > 32) {
                throw new IllegalArgumentException("threads must be 1 to 32, got " + threads);
            }
            for (int retained : retainedCounts) {
                for (boolean autoCommit : pools) {
                    list.add(new Scenario(engine, threads, faults, autoCommit, retained));
                }
            }
        }
        return list;
    }

    static List<Contender> contenders(int batch) {
        return List.of(
                JdbcContenders.noGuard(),
                JdbcContenders.handWritten(),
                JdbcContenders.handWrittenBatch(batch),
                JdbcContenders.inbox(),
                JdbcContenders.inboxBatch(batch),
                JdbcContenders.stateMachine(),
                JdbcContenders.jdbcLease(),
                RedisContenders.idemRedis(),
                RedisContenders.idemRedisBatch(batch),
                AnchorContenders.camel(),
                AnchorContenders.springIntegration(),
                RedisContenders.setNxRecipe());
    }

    /** Runs the benchmark; progress goes to standard error. */
    static Report run(Options options) throws Exception {
        String loadBefore = Machine.loadAverage();
        long started = System.nanoTime();
        List<String> skipped = new ArrayList<>();
        Map<DatabaseKey, TestDatabase> databases = new LinkedHashMap<>();
        Map<Engine, String> databaseFacts = new EnumMap<>(Engine.class);
        Map<PoolKey, HikariDataSource> pools = new LinkedHashMap<>();
        Faults faults = new Faults();
        String redisUri = null;
        if (options.redis()) {
            redisUri = reachable("Redis", skipped, () -> TestServers.redis().url());
        }
        List<Measurement> measurements = new ArrayList<>();
        List<ClaimsMeasurement> claims = new ArrayList<>();
        List<String> scaleFacts = new ArrayList<>();
        Workload clean = Workload.generate(options.shape().withoutFaults());
        Workload faulty = Workload.generate(options.shape());
        List<Contender> contenders = contenders(options.batch()).stream()
                .filter(c -> options.contenders().contains(c.id()))
                .toList();
        // a batched contender would end a round of the others' size within a fraction of a second: too short to time
        Workload batched = contenders.stream().anyMatch(Contender::batched)
                ? Workload.generate(options.shape().withoutFaults().withDeliveries(options.batchDeliveries()))
                : clean;
        String redisFacts = redisUri == null ? "" : Machine.redis(redisUri);
        try {
            Set<Engine> unreachable = new LinkedHashSet<>();
            for (Scenario s : options.scenarios()) {
                DatabaseKey key = s.pool().database();
                if (unreachable.contains(key.engine())) {
                    continue;
                }
                if (!databases.containsKey(key)) {
                    TestDatabase db = reachable(key.engine().name(), skipped, () -> open(key.engine()));
                    if (db == null) {
                        unreachable.add(key.engine());
                        continue;
                    }
                    databases.put(key, db);
                    databaseFacts.putIfAbsent(key.engine(), Machine.database(key.engine(), db.dataSource()));
                }
                TestDatabase db = databases.get(key);
                if (!pools.containsKey(s.pool())) {
                    int threads = options.scenarios().stream()
                            .mapToInt(Scenario::threads)
                            .max()
                            .orElse(1);
                    HikariDataSource pool = countedPool(s.pool(), db, 2 * threads + 2); // consumers, racers, purge

                    if (pools.keySet().stream().noneMatch(p -> p.database().equals(key))) {
                        new Bank(pool, key.engine(), faults).createTables();
                    }
                    pools.put(s.pool(), pool);
                }
            }
            Set<Engine> engines = new LinkedHashSet<>();
            databases.keySet().forEach(k -> engines.add(k.engine()));
            System.err.printf(Locale.ROOT, "databases and tables ready after %.1f s%n", seconds(started));
            if (options.warmup() > 0) {
                warmUp(options, contenders, engines, pools, faults, redisUri);
            }
            for (int round = 0; round < options.rounds(); round++) {
                for (Scenario s : options.scenarios()) {
                    if (!pools.containsKey(s.pool()) || (s.faults() && round > 0)) {
                        continue;
                    }
                    Bank bank = new Bank(pools.get(s.pool()), s.engine(), faults);
                    List<Contender> order = new ArrayList<>(contenders);
                    Collections.rotate(order, -round);
                    for (Contender c : order) {
                        if (c.needsRedis() && redisUri == null) {
                            continue;
                        }
                        Workload workload = s.faults() ? faulty : c.batched() ? batched : clean;
                        measurements.add(runOne(c, s, round, workload, bank, redisUri, options));
                    }
                }
                if (redisUri != null) {
                    Set<Integer> threadCounts = options.scenarios().stream()
                            .filter(s -> !s.faults())
                            .map(Scenario::threads)
                            .collect(Collectors.toCollection(LinkedHashSet::new));
                    for (int threads : threadCounts) {
                        claims.addAll(claimsOnly(redisUri, clean, threads, round, options.batch()));
                    }
                }
            }
            int mostRetained = options.scenarios().stream()
                    .mapToInt(Scenario::retained)
                    .max()
                    .orElse(0);
            if (mostRetained > 0) {
                for (Engine engine : engines) {
                    Scenario busiest = options.scenarios().stream()
                            .filter(s -> s.engine() == engine && !s.faults() && s.retained() == mostRetained)
                            .max(java.util.Comparator.comparingInt(Scenario::threads))
                            .orElseThrow();
                    Bank bank = new Bank(pools.get(busiest.pool()), engine, faults);
                    scaleFacts.add(Scale.tableBytes(bank));
                    scaleFacts.add(Scale.purgeUnderLoad(bank, mostRetained, busiest.threads(), clean, options));
                }
                if (redisUri != null) {
                    scaleFacts.add(Scale.redisBytesPerMark(options.batch()));
                }
            }
        } finally {
            long closing = System.nanoTime();
            pools.values().forEach(HikariDataSource::close);
            databases.values().forEach(TestDatabase::close);
            System.err.printf(
                    Locale.ROOT,
                    "pools and databases closed in %.1f s, %.1f s after the start%n",
                    seconds(closing),
                    seconds(started));
        }
        String markdown = Tables.markdown(
                options,
                measurements,
                claims,
                contenders,
                skipped,
                List.of(
                        "Date: " + LocalDate.now(),
                        "Machine: " + Machine.cpu() + "; " + Machine.jdk(),
                        "Load average (1 min) before / after: " + loadBefore + " / " + Machine.loadAverage(),
                        databaseFacts.values().stream().collect(Collectors.joining("; ")),
                        redisFacts,
                        String.join("; ", scaleFacts)));
        return new Report(measurements, claims, skipped, markdown);
    }

    /**
     * Runs every contender once per database (in its first timed scenario) on a clean workload, untimed, so that the
     * timed rounds measure compiled code: a guard's longer code path would otherwise pay more of the JIT's warm-up than the
     * hand-written loop does. Every contender gets the same warm-up.
     */
    private static void warmUp(
            Options options,
            List<Contender> contenders,
            Set<Engine> engines,
            Map<PoolKey, HikariDataSource> pools,
            Faults faults,
            @Nullable String redisUri)
            throws Exception {
        Workload warm = Workload.generate(options.shape().withDeliveries(options.warmup()));
        Map<Engine, Scenario> firstOfEachEngine = new EnumMap<>(Engine.class);
        options.scenarios().stream()
                .filter(s -> !s.faults() && engines.contains(s.engine()))
                .forEach(s -> firstOfEachEngine.putIfAbsent(s.engine(), s));
        for (Scenario s : firstOfEachEngine.values()) {
            Bank bank = new Bank(pools.get(s.pool()), s.engine(), faults);
            for (Contender c : contenders) {
                if (!c.needsRedis() || redisUri != null) {
                    runOne(c, s, -1, warm, bank, redisUri, options);
                }
            }
        }
        if (redisUri != null && !firstOfEachEngine.isEmpty()) {
            claimsOnly(redisUri, warm, 1, -1, options.batch());
        }
    }

    private static Measurement runOne(
            Contender c, Scenario s, int round, Workload workload, Bank bank, @Nullable String redisUri, Options o)
            throws Exception {
        String runId = "e2e" + Long.toString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE, 36);
        Runner.Result result;
        Costs costs;
        String server = s.engine() == Engine.MARIADB ? "mariadb" : "postgres";
        long started = System.nanoTime();
        long prepared;
        try (Contender.Session session = c.open(new Contender.Env(bank, redisUri, runId, o.lease()))) {
            bank.reset(workload, s.retained(), Bank.dedupTableOf(c.id())); // after open: it creates its own table
            prepared = System.nanoTime();
            long trips = CountingSocketFactory.total();
            long jvm = ProcessCpu.jvmNanos();
            Map<Long, Long> database = ProcessCpu.serverNanos(server);
            Map<Long, Long> redis = ProcessCpu.serverNanos("redis");
            long commands = redisUri == null ? 0 : Machine.redisCommands(redisUri);
            result = Runner.run(session, workload, s.threads(), c.batchSize(), bank.faults(), o.timeout());
            costs = new Costs(
                    CountingSocketFactory.total() - trips,
                    ProcessCpu.jvmNanos() - jvm,
                    ProcessCpu.used(database, ProcessCpu.serverNanos(server)),
                    ProcessCpu.used(redis, ProcessCpu.serverNanos("redis")),
                    redisUri == null ? 0 : Machine.redisCommands(redisUri) - commands);
        } finally {
            if (redisUri != null && c.needsRedis()) {
                ClaimsOnly.deleteKeys(redisUri, runId);
            }
        }
        Bank.Check check = result.finished() ? bank.check(workload, c.ledgerTable()) : null;
        Measurement m = new Measurement(c.id(), s, round, result, check, costs);
        int n = workload.deliveries().size();
        System.err.printf(
                Locale.ROOT,
                "%s %-26s %-22s %8.0f/s  rt/new %.2f rt/dup %.2f rt/msg %.2f jvm %.0fus db %.0fus redis %.0fus"
                        + " cmds %.2f  %s%s  [%.1f s, of which opening and resetting the tables %.1f s]%n",
                roundLabel(round),
                s.title(),
                c.id(),
                result.perSecond(),
                result.tripsPerNew(),
                result.tripsPerDuplicate(),
                (double) costs.roundTrips() / n,
                costs.jvmNanos() / 1e3 / n,
                costs.databaseNanos() / 1e3 / n,
                costs.redisNanos() / 1e3 / n,
                (double) costs.redisCommands() / n,
                check == null ? "DID NOT FINISH" : check,
                result.firstError() == null ? "" : "  first error: " + result.firstError(),
                seconds(started),
                (prepared - started) / 1e9);
        return m;
    }

    private static double seconds(long since) {
        return (System.nanoTime() - since) / 1e9;
    }

    private static String roundLabel(int round) {
        return round < 0 ? "warm-up" : "round " + (round + 1);
    }

    private static List<ClaimsMeasurement> claimsOnly(String uri, Workload workload, int threads, int round, int batch)
            throws InterruptedException {
        List<ClaimsMeasurement> out = new ArrayList<>();
        List<String> order = new ArrayList<>(List.of("redis-setnx-pipelined", "idem-redis-claimall"));
        Collections.rotate(order, -round);
        for (String id : order) {
            String prefix = "e2e" + Long.toString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE, 36);
            try {
                ClaimsOnly.Result r = id.equals("redis-setnx-pipelined")
                        ? ClaimsOnly.rawSetNx(uri, prefix, workload, threads, batch)
                        : ClaimsOnly.idemClaimAll(uri, prefix, workload, threads, batch);
                out.add(new ClaimsMeasurement(id, threads, round, r));
                System.err.printf(
                        Locale.ROOT,
                        "%s Redis %d threads          %-22s %8.0f claims/s  won %d of %d%n",
                        roundLabel(round),
                        threads,
                        id,
                        r.perSecond(),
                        r.won(),
                        r.expected());
            } finally {
                ClaimsOnly.deleteKeys(uri, prefix);
            }
        }
        return out;
    }

    /**
     * A pool of at most {@code size} connections on the database of {@code db} whose connections count their round
     * trips, handing them out in auto-commit or not.
     */
    private static HikariDataSource countedPool(PoolKey key, TestDatabase db, int size) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(key.engine() == Engine.H2 ? db.url() : CountingSocketFactory.urlWithCounting(db.url()));
        config.setMaximumPoolSize(size); // the servers are shared: no more connections than the run can use
        config.setMinimumIdle(1);
        config.setAutoCommit(key.autoCommit());
        config.setPoolName(
                "e2e-" + key.engine().name().toLowerCase(Locale.ROOT) + (key.autoCommit() ? "-auto" : "-manual"));
        return new HikariDataSource(config);
    }

    private static TestDatabase open(Engine engine) {
        return switch (engine) {
            case POSTGRESQL -> TestDatabase.postgres("EndToEnd");
            case MARIADB -> TestDatabase.mariadb("EndToEnd");
            case H2 -> TestDatabase.h2("EndToEnd");
        };
    }

    /** A server through the test fixture, or null (and why, in {@code skipped}) when it does not answer. */
    private static <T> @Nullable T reachable(String name, List<String> skipped, java.util.function.Supplier<T> find) {
        try {
            return find.get();
        } catch (RuntimeException e) {
            if (TestServers.servicesRequired()) {
                throw e;
            }
            skipped.add(name + ": " + e.getMessage());
            return null;
        }
    }

    static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }
}
