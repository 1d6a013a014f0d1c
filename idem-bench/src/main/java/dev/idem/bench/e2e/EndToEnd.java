package dev.idem.bench.e2e;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idem.bench.e2e.Workload.Shape;
import dev.idem.jdbc.JdbcStore;
import dev.idem.testsupport.CountingSocketFactory;
import dev.idem.testsupport.TestDatabase;
import dev.idem.testsupport.TestDatabase.Engine;
import dev.idem.testsupport.TestServers;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
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
 * {@code --rounds} [5], {@code --scenarios} throughput runs, database:threads [postgresql:1,postgresql:4,mariadb:4],
 * {@code --fault-scenarios} runs with faults, once [postgresql:4,mariadb:4], {@code --handler-failures} [0.01], {@code
 * --crashes-in-handler} [0.0025], {@code --crashes-after-commit} [0.0025], {@code --batch} [100], {@code --lease}
 * lease of the lease stores in ms [2000], {@code --contenders} ids to run [all], {@code --no-redis}, {@code --seed}
 * [42], {@code --timeout} per run in s [300], {@code --warmup} deliveries of an untimed first run of every contender on every
 * database, 0 for none [10000], {@code --out} a file for the Markdown report.
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

    /** One database and thread count; with faults or without. */
    record Scenario(Engine engine, int threads, boolean faults) {
        String title() {
            String db = switch (engine) {
                case POSTGRESQL -> "PostgreSQL";
                case MARIADB -> "MariaDB";
                case H2 -> "H2";
            };
            return db + " " + threads + (threads == 1 ? " thread" : " threads") + (faults ? ", faults" : "");
        }
    }

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
            int retained,
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
                "--lease",
                "--contenders",
                "--seed",
                "--timeout",
                "--retained",
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
        List<Scenario> scenarios = new ArrayList<>();
        scenarios.addAll(scenarios(given.getOrDefault("--scenarios", "postgresql:1,postgresql:4,mariadb:4"), false));
        scenarios.addAll(scenarios(given.getOrDefault("--fault-scenarios", "postgresql:4,mariadb:4"), true));
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
        return new Options(
                shape,
                rounds,
                scenarios,
                contenders,
                !flags.contains("--no-redis"),
                Duration.ofMillis(Long.parseLong(given.getOrDefault("--lease", "2000"))),
                Duration.ofSeconds(Long.parseLong(given.getOrDefault("--timeout", "300"))),
                batch,
                Integer.parseInt(given.getOrDefault("--retained", "0")),
                Integer.parseInt(given.getOrDefault("--warmup", "10000")),
                given.containsKey("--out") ? Path.of(given.get("--out")) : null,
                String.join(" ", args));
    }

    private static List<Scenario> scenarios(String spec, boolean faults) {
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
            list.add(new Scenario(engine, threads, faults));
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
        List<String> skipped = new ArrayList<>();
        Map<Engine, TestDatabase> databases = new EnumMap<>(Engine.class);
        Map<Engine, String> databaseFacts = new EnumMap<>(Engine.class);
        Map<Engine, HikariDataSource> counted = new EnumMap<>(Engine.class);
        Faults faults = new Faults();
        String redisUri = null;
        if (options.redis()) {
            redisUri = reachable("Redis", skipped, () -> TestServers.redis().url());
        }
        List<Measurement> measurements = new ArrayList<>();
        List<ClaimsMeasurement> claims = new ArrayList<>();
        List<String> purgeFacts = new ArrayList<>();
        Workload clean = Workload.generate(options.shape().withoutFaults());
        Workload faulty = Workload.generate(options.shape());
        List<Contender> contenders = contenders(options.batch()).stream()
                .filter(c -> options.contenders().contains(c.id()))
                .toList();
        String redisFacts = redisUri == null ? "" : Machine.redis(redisUri);
        try {
            Set<Engine> engines = new LinkedHashSet<>();
            options.scenarios().forEach(s -> engines.add(s.engine()));
            for (Engine engine : engines) {
                TestDatabase db = reachable(engine.name(), skipped, () -> open(engine));
                if (db != null) {
                    databases.put(engine, db);
                    counted.put(engine, countedPool(engine, db));
                    new Bank(counted.get(engine), engine, faults).createTables();
                    databaseFacts.put(engine, Machine.database(engine, db.dataSource()));
                }
            }
            if (options.warmup() > 0) {
                warmUp(options, contenders, databases.keySet(), counted, faults, redisUri);
            }
            for (int round = 0; round < options.rounds(); round++) {
                for (Scenario s : options.scenarios()) {
                    TestDatabase db = databases.get(s.engine());
                    if (db == null || (s.faults() && round > 0)) {
                        continue;
                    }
                    Bank bank = new Bank(counted.get(s.engine()), s.engine(), faults);
                    List<Contender> order = new ArrayList<>(contenders);
                    Collections.rotate(order, -round);
                    for (Contender c : order) {
                        if (c.needsRedis() && redisUri == null) {
                            continue;
                        }
                        measurements.add(runOne(c, s, round, s.faults() ? faulty : clean, bank, redisUri, options));
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
            if (options.retained() > 0) {
                for (Map.Entry<Engine, HikariDataSource> e : counted.entrySet()) {
                    purgeFacts.add(purgeRate(new Bank(e.getValue(), e.getKey(), faults), options.retained()));
                }
            }
        } finally {
            counted.values().forEach(HikariDataSource::close);
            databases.values().forEach(TestDatabase::close);
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
                        options.retained() == 0
                                ? ""
                                : "Retention full: " + options.retained() + " completed marks of other keys in"
                                        + " idem_keys during every run; " + String.join("; ", purgeFacts)));
        return new Report(measurements, claims, skipped, markdown);
    }

    /**
     * Runs every contender once per database (in its first timed scenario) on a clean workload, untimed, so that the
     * timed rounds measure compiled code: a guard's longer code path would otherwise pay more of the JIT's warm-up than the
     * hand-written loop does.
     */
    private static void warmUp(
            Options options,
            List<Contender> contenders,
            Set<Engine> engines,
            Map<Engine, HikariDataSource> counted,
            Faults faults,
            @Nullable String redisUri)
            throws Exception {
        Workload warm = Workload.generate(options.shape().withDeliveries(options.warmup()));
        Map<Engine, Scenario> firstOfEachEngine = new EnumMap<>(Engine.class);
        options.scenarios().stream()
                .filter(s -> !s.faults() && engines.contains(s.engine()))
                .forEach(s -> firstOfEachEngine.putIfAbsent(s.engine(), s));
        for (Scenario s : firstOfEachEngine.values()) {
            Bank bank = new Bank(counted.get(s.engine()), s.engine(), faults);
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

    /** How fast a purge deletes {@code count} marks whose retention ended, on an otherwise empty table. */
    private static String purgeRate(Bank bank, int count) throws SQLException {
        if (!bank.tableExists("idem_keys")) {
            return "purge on " + bank.engine() + ": not measured, no Idem contender ran there";
        }
        bank.execute("DELETE FROM idem_keys");
        bank.fillMarks(count, true);
        JdbcStore store = JdbcStore.builder(bank.dataSource()).build();
        long start = System.nanoTime();
        int purged = store.purgeExpired();
        double seconds = (System.nanoTime() - start) / 1e9;
        String fact = String.format(
                Locale.ROOT,
                "purge on %s: %,d expired marks in %.2f s (%,.0f rows/s)",
                bank.engine(),
                purged,
                seconds,
                purged / seconds);
        System.err.println(fact);
        return fact;
    }

    private static Measurement runOne(
            Contender c, Scenario s, int round, Workload workload, Bank bank, @Nullable String redisUri, Options o)
            throws Exception {
        List<String> ownTables = new ArrayList<>();
        for (String table : List.of("idem_keys", "CAMEL_MESSAGEPROCESSED")) {
            if (bank.tableExists(table)) {
                ownTables.add(table);
            }
        }
        bank.reset(workload, ownTables);
        if (o.retained() > 0 && ownTables.contains("idem_keys")) {
            bank.fillMarks(o.retained(), false);
        }
        String runId = "e2e" + Long.toString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE, 36);
        Runner.Result result;
        Costs costs;
        String server = s.engine() == Engine.MARIADB ? "mariadb" : "postgres";
        try (Contender.Session session = c.open(new Contender.Env(bank, redisUri, runId, o.lease()))) {
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
                        + " cmds %.2f  %s%s%n",
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
                result.firstError() == null ? "" : "  first error: " + result.firstError());
        return m;
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

    /** A pool on the database of {@code db} whose connections count their round trips. */
    private static HikariDataSource countedPool(Engine engine, TestDatabase db) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(engine == Engine.H2 ? db.url() : CountingSocketFactory.urlWithCounting(db.url()));
        config.setMaximumPoolSize(16);
        config.setPoolName("e2e-" + engine.name().toLowerCase(Locale.ROOT));
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
