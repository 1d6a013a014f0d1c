package dev.idem.demo;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * The lab's settings, from the command line. Immutable.
 *
 * @param orders how many orders the flow has
 * @param partitions partitions of the order topic
 * @param broker the broker the flow goes over: {@code kafka}, {@code rocketmq}, {@code rabbitmq} or {@code nats}
 * @param kafkaBootstrap an external broker, or empty for the in-process one
 * @param rocketmqNamesrv an external RocketMQ name server, or empty for the in-process name server and broker
 * @param rabbitmqUrl the RabbitMQ server of {@code --broker rabbitmq}
 * @param natsUrl the NATS server (with JetStream) of {@code --broker nats}
 * @param jdbcUrl an external database, or empty for the embedded H2 file in {@code out}
 * @param redisUrl a Redis for the lease store, or empty to probe 127.0.0.1:6379
 * @param noRedis never use Redis, even if one answers
 * @param out where the report, the log and the H2 file go
 * @param faults what to inject, and how often
 * @param seed makes the flow and the injections repeatable
 */
record LabOptions(
        int orders,
        int partitions,
        String broker,
        Optional<String> kafkaBootstrap,
        Optional<String> rocketmqNamesrv,
        String rabbitmqUrl,
        String natsUrl,
        Optional<String> jdbcUrl,
        Optional<String> redisUrl,
        boolean noRedis,
        Path out,
        Faults faults,
        long seed,
        boolean quiet) {

    static final int DEFAULT_ORDERS = 3000;
    static final List<String> BROKERS = List.of("kafka", "rocketmq", "rabbitmq", "nats");
    static final String DEFAULT_RABBITMQ_URL = "amqp://guest:guest@127.0.0.1:5672";
    static final String DEFAULT_NATS_URL = "nats://127.0.0.1:4222";

    private static final Set<String> VALUED = Set.of(
            "--orders",
            "--partitions",
            "--broker",
            "--kafka-bootstrap",
            "--rocketmq-namesrv",
            "--rabbitmq-url",
            "--nats-url",
            "--jdbc-url",
            "--redis-url",
            "--out",
            "--seed",
            "--producer-retry-rate",
            "--app-resend-rate",
            "--consumer-timeout-rate",
            "--concurrent-rate",
            "--crash-rate",
            "--reorder-rate",
            "--cancel-rate");

    /**
     * How often each duplicate cause is injected, as fractions in [0, 1].
     *
     * @param producerRetry messages whose produce acknowledgement is lost, so the producer client sends them again
     * @param appResend messages the application sends again after its send timed out
     * @param consumerTimeout messages redelivered to a second consumer while the first still handles them
     * @param concurrent messages handed to two consumers at the same instant
     * @param crash messages after whose database commit the consumer crashes, before committing the offset
     * @param reorder orders whose CANCEL overtakes the CREATE, or whose SHIP overtakes the PAY
     * @param cancel orders that are cancelled instead of paid and shipped (not a fault: part of the flow)
     */
    record Faults(
            double producerRetry,
            double appResend,
            double consumerTimeout,
            double concurrent,
            double crash,
            double reorder,
            double cancel) {

        static Faults defaults() {
            return new Faults(0.02, 0.01, 0.01, 0.01, 0.002, 0.05, 0.15);
        }
    }

    static final String USAGE = """
            Usage: java -jar idem-demo/target/idem-demo.jar [options]

            The double-charge lab: a payment flow over a broker into a database, every duplicate cause injected,
            consumed once without a guard and once per Idem guard, the damage counted with SQL.
            To judge your own consumer instead: --consumer-cmd '<command>' (--consumer-cmd x --help for its options).
            The outbox's two-stage flow (orders -> payments -> shipping): --flow two-stage (--flow two-stage --help).

              --orders N                 orders in the flow (default 3000)
              --partitions N             partitions of the order topic; consumer channels on RabbitMQ (default 4)
              --broker B                 kafka, rocketmq, rabbitmq or nats (default kafka)
              --kafka-bootstrap H:P      use this Kafka broker (default: an in-process broker)
              --rocketmq-namesrv H:P     use this RocketMQ name server (default: an in-process name server and broker)
              --rabbitmq-url URL         amqp://user:pass@host:port of --broker rabbitmq
                                         (default amqp://guest:guest@127.0.0.1:5672)
              --nats-url URL             nats://host:port of --broker nats, JetStream on (default nats://127.0.0.1:4222)
              --jdbc-url URL             jdbc:postgresql://..., jdbc:mariadb://..., jdbc:mysql://... or jdbc:h2:...
                                         (default: an H2 file in the output directory)
              --redis-url URL            redis://host:port for the Redis lease store (default: 127.0.0.1:6379 if it answers)
              --no-redis                 do not use Redis even if one answers
              --out DIR                  report directory (default idem-demo/out, or ./idem-lab-out outside the repo)
              --seed N                   makes the flow and the injections repeatable (default 42)
              --quiet                    no progress bar
            Fault rates, fractions in [0,1] (defaults in brackets):
              --producer-retry-rate R    produce ack lost, the client retries: 2 copies in the topic [0.02]
              --app-resend-rate R        send timed out, the application sends again: 2 copies [0.01]
              --consumer-timeout-rate R  redelivered to a 2nd consumer while the 1st still works [0.01]
              --concurrent-rate R        the same message to two consumers at the same instant [0.01]
              --crash-rate R             crash after the database commit, before the offset commit [0.002]
              --reorder-rate R           CANCEL before CREATE, SHIP before PAY [0.05]
              --cancel-rate R            orders cancelled instead of paid (the flow, not a fault) [0.15]

            Exit status: 0 when every guarded strategy has no double charge, no lost payment and every order in its
            right final state; 1 when one has not, or the run did not finish; 2 for bad options or an unreachable
            server.
            """;

    /** Parses {@code args}; a bad option throws {@link BadOptionException} naming it and the fix. */
    static LabOptions parse(String[] args, Path workingDirectory) {
        int orders = DEFAULT_ORDERS;
        int partitions = 4;
        String broker = "kafka";
        String kafka = null;
        String rocketmq = null;
        String rabbitmq = DEFAULT_RABBITMQ_URL;
        String nats = DEFAULT_NATS_URL;
        String jdbc = null;
        String redis = null;
        boolean noRedis = false;
        Path out = null;
        long seed = 42;
        boolean quiet = false;
        Faults d = Faults.defaults();
        double producerRetry = d.producerRetry();
        double appResend = d.appResend();
        double consumerTimeout = d.consumerTimeout();
        double concurrent = d.concurrent();
        double crash = d.crash();
        double reorder = d.reorder();
        double cancel = d.cancel();
        List<String> list = new ArrayList<>(List.of(args));
        for (int i = 0; i < list.size(); i++) {
            String arg = list.get(i);
            LabOptions.Arg parsed = LabOptions.Arg.of(arg);
            String name = parsed.name();
            String inline = parsed.inline();
            switch (name) {
                case "--no-redis" -> noRedis = true;
                case "--quiet" -> quiet = true;
                case "--help", "-h" -> throw new HelpRequested();
                default -> {
                    if (!VALUED.contains(name)) {
                        throw new BadOptionException(
                                "unknown option '" + name + "': run with --help for the list of options");
                    }
                    String value = inline != null ? inline : value(list, ++i, name);
                    switch (name) {
                        case "--orders" -> orders = integer(name, value, 1, 10_000_000);
                        case "--partitions" -> partitions = integer(name, value, 2, 64);
                        case "--broker" -> broker = broker(value);
                        case "--kafka-bootstrap" -> kafka = hostPorts(name, value, "127.0.0.1:9092");
                        case "--rocketmq-namesrv" -> rocketmq = hostPorts(name, value, "127.0.0.1:9876");
                        case "--rabbitmq-url" -> rabbitmq = url(name, value, "amqp", "amqp://guest:guest@host:5672");
                        case "--nats-url" -> nats = url(name, value, "nats", "nats://host:4222");
                        case "--jdbc-url" -> jdbc = jdbcUrl(value);
                        case "--redis-url" -> redis = redisUrl(value);
                        case "--out" -> out = Path.of(value);
                        case "--seed" -> seed = integer(name, value, 0, Integer.MAX_VALUE);
                        case "--producer-retry-rate" -> producerRetry = rate(name, value);
                        case "--app-resend-rate" -> appResend = rate(name, value);
                        case "--consumer-timeout-rate" -> consumerTimeout = rate(name, value);
                        case "--concurrent-rate" -> concurrent = rate(name, value);
                        case "--crash-rate" -> crash = rate(name, value);
                        case "--reorder-rate" -> reorder = rate(name, value);
                        case "--cancel-rate" -> cancel = rate(name, value);
                        default ->
                            throw new BadOptionException(
                                    "unknown option '" + name + "': run with --help for the list of options");
                    }
                }
            }
        }
        if (consumerTimeout + concurrent + crash > 1.0) {
            throw new BadOptionException("--consumer-timeout-rate, --concurrent-rate and --crash-rate add up to more"
                    + " than 1 (each message gets at most one consumer fault): lower them");
        }
        if (kafka != null && !broker.equals("kafka")) {
            throw new BadOptionException("--kafka-bootstrap is for --broker kafka, not " + broker + ": drop one");
        }
        if (rocketmq != null && !broker.equals("rocketmq")) {
            throw new BadOptionException("--rocketmq-namesrv is for --broker rocketmq, not " + broker + ": drop one");
        }
        if (redis != null && noRedis) {
            throw new BadOptionException("--redis-url and --no-redis contradict each other: pass only one");
        }
        if (out == null) {
            out = LabOptions.defaultOut(workingDirectory);
        }
        return new LabOptions(
                orders,
                partitions,
                broker,
                Optional.ofNullable(kafka),
                Optional.ofNullable(rocketmq),
                rabbitmq,
                nats,
                Optional.ofNullable(jdbc),
                Optional.ofNullable(redis),
                noRedis,
                out,
                new Faults(producerRetry, appResend, consumerTimeout, concurrent, crash, reorder, cancel),
                seed,
                quiet);
    }

    /** An argument: {@code --name=value} split into its name and inline value, any other one a name without one. */
    record Arg(String name, String inline) {
        static Arg of(String arg) {
            int eq = arg.indexOf('=');
            return arg.startsWith("--") && eq > 0
                    ? new Arg(arg.substring(0, eq), arg.substring(eq + 1))
                    : new Arg(arg, null);
        }
    }

    /** Without {@code --out}: {@code idem-demo/out} when run from the project's root, else {@code ./idem-lab-out}. */
    static Path defaultOut(Path workingDirectory) {
        return workingDirectory.resolve("idem-demo").toFile().isDirectory()
                ? workingDirectory.resolve("idem-demo").resolve("out")
                : workingDirectory.resolve("idem-lab-out");
    }

    static String value(List<String> args, int i, String name) {
        if (i >= args.size() || args.get(i).startsWith("--")) {
            throw new BadOptionException("option " + name + " needs a value: write " + name + " VALUE (see --help)");
        }
        return args.get(i);
    }

    static int integer(String name, String value, int min, int max) {
        long n;
        try {
            n = Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            throw new BadOptionException(name + " must be a whole number, got '" + value + "'");
        }
        if (n < min || n > max) {
            throw new BadOptionException(name + " must be between " + min + " and " + max + ", got " + value);
        }
        return (int) n;
    }

    static double rate(String name, String value) {
        double r;
        try {
            r = Double.parseDouble(value.trim());
        } catch (NumberFormatException e) {
            throw new BadOptionException(
                    name + " must be a fraction between 0 and 1 (e.g. 0.02 for 2%), got '" + value + "'");
        }
        if (!(r >= 0.0 && r <= 1.0)) {
            throw new BadOptionException(name + " must be between 0 and 1 (a fraction of messages; 0.02 = 2%), got "
                    + value + (r > 1 && r <= 100 ? ": for " + value + "% write " + (r / 100) : ""));
        }
        return r;
    }

    /** A list of {@code host:port}, separated by commas (Kafka) or semicolons (RocketMQ name servers). */
    static String hostPorts(String name, String value, String example) {
        for (String server : value.split("[,;]")) {
            int colon = server.lastIndexOf(':');
            boolean ok = colon > 0;
            if (ok) {
                try {
                    int port = Integer.parseInt(server.substring(colon + 1));
                    ok = port > 0 && port < 65536;
                } catch (NumberFormatException e) {
                    ok = false;
                }
            }
            if (!ok) {
                throw new BadOptionException(
                        name + " '" + value + "' is not a list of host:port: write e.g. " + name + " " + example);
            }
        }
        return value;
    }

    private static String broker(String value) {
        String b = value.trim().toLowerCase(Locale.ROOT);
        if (!BROKERS.contains(b)) {
            throw new BadOptionException("--broker '" + value + "' is not one of " + String.join(", ", BROKERS)
                    + ": write e.g. --broker nats");
        }
        return b;
    }

    static String url(String name, String value, String scheme, String example) {
        String lower = value.toLowerCase(Locale.ROOT);
        if (!lower.startsWith(scheme + "://") && !lower.startsWith(scheme + "s://")) {
            throw new BadOptionException(
                    name + " has an unknown scheme '" + schemeOf(value) + "': write e.g. " + name + " " + example);
        }
        return value;
    }

    static String jdbcUrl(String url) {
        String lower = url.toLowerCase(Locale.ROOT);
        if (lower.startsWith("jdbc:postgresql:")
                || lower.startsWith("jdbc:mariadb:")
                || lower.startsWith("jdbc:mysql:")
                || lower.startsWith("jdbc:h2:")) {
            return url;
        }
        String scheme = schemeOf(url);
        throw new BadOptionException("--jdbc-url has an unknown scheme '" + scheme
                + "': use jdbc:postgresql://host:5432/db?user=..., jdbc:mariadb://host:3306/db?user=...,"
                + " jdbc:mysql://... or jdbc:h2:..., or leave it out for the embedded H2");
    }

    private static String redisUrl(String url) {
        String lower = url.toLowerCase(Locale.ROOT);
        if (lower.startsWith("redis://") || lower.startsWith("rediss://")) {
            return url;
        }
        throw new BadOptionException("--redis-url has an unknown scheme '" + schemeOf(url)
                + "': write redis://host:6379 (or rediss:// for TLS), or --no-redis");
    }

    private static String schemeOf(String url) {
        int first = url.indexOf(':');
        if (first < 0) {
            return url;
        }
        if (url.startsWith("jdbc:")) {
            int second = url.indexOf(':', 5);
            return second < 0 ? url : url.substring(0, second);
        }
        return url.substring(0, first);
    }

    /** A bad command-line option: the message names it and the fix. */
    static final class BadOptionException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        BadOptionException(String message) {
            super(message);
        }
    }

    /** {@code --help}. */
    static final class HelpRequested extends RuntimeException {
        private static final long serialVersionUID = 1L;

        HelpRequested() {
            super("help");
        }
    }
}
