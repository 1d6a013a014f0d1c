package dev.idem.demo;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * The settings of a consumer lab ({@code --consumer-cmd}): the user's consumer command, how many copies run, the
 * broker, the database, the effects SQL, the payment stream and the faults. Immutable.
 *
 * @param command the consumer command with its placeholders
 * @param consumers copies of the command that run at once
 * @param broker {@code kafka}, {@code nats} or {@code rabbitmq}
 * @param kafkaBootstrap an external Kafka, or empty for the in-process broker
 * @param natsUrl the NATS server (JetStream on)
 * @param rabbitmqUrl the RabbitMQ server
 * @param partitions partitions of the Kafka topic
 * @param jdbcUrl the consumers' database, or empty for an H2 server the lab starts
 * @param effectsSql the query listing the applied effects, or empty for the lab's ledger convention
 * @param accountSql a statement run once per account before the stream (one {@code ?}: the account id), or empty
 * @param shape the payment stream
 * @param kills whether consumers are killed ({@code kill -9}) during the stream
 * @param dbKills how many times the consumers' database sessions are ended during the stream
 * @param readySeconds how long the lab waits for the consumers to join before it sends
 * @param drainSeconds how long the lab waits for the drain after the stream before it gives up (exit 3)
 * @param settleSeconds how long the effect count must stay the same, with nothing left in the broker, to be drained
 */
record ConsumerLabOptions(
        ConsumerCommand command,
        int consumers,
        String broker,
        Optional<String> kafkaBootstrap,
        String natsUrl,
        String rabbitmqUrl,
        int partitions,
        Optional<String> jdbcUrl,
        Optional<String> effectsSql,
        Optional<String> accountSql,
        PaymentWorkload.Shape shape,
        boolean kills,
        int dbKills,
        int readySeconds,
        int drainSeconds,
        int settleSeconds,
        Path out,
        long seed,
        boolean quiet) {

    static final String OPTION = "--consumer-cmd";

    private static final Set<String> VALUED = Set.of(
            OPTION,
            "--consumers",
            "--broker",
            "--kafka-bootstrap",
            "--nats-url",
            "--rabbitmq-url",
            "--partitions",
            "--jdbc-url",
            "--effects-sql",
            "--account-sql",
            "--payments",
            "--accounts",
            "--resend-rate",
            "--late-resend-rate",
            "--much-later-rate",
            "--cross-rate",
            "--db-kills",
            "--ready-timeout",
            "--drain-timeout",
            "--settle",
            "--out",
            "--seed");

    static final String USAGE = """
            Usage: java -jar idem-demo/target/idem-demo.jar --consumer-cmd '<command>' [options]

            The consumer lab: starts the broker, runs N copies of your consumer command (each its own process
            group), sends a payment stream with the duplicates real systems make, kills consumers (kill -9) and
            their database sessions while they work, waits for the drain, and judges your effects by SQL against
            the payments it sent.

            Placeholders in the command (replaced shell-quoted; do not quote them yourself):
              {bootstrap} {topic} {deadLetterTopic}          Kafka
              {natsUrl} {stream} {subject} {deadLetterSubject}  NATS
              {amqpUrl} {queue} {retryQueue} {deadLetterQueue}  RabbitMQ (Idem's RabbitTopology)
              {brokerUrl} {group} {jdbcUrl} {instance} {java} {classpath}

              --consumers N              copies of the command at once (default 3)
              --broker B                 kafka, nats or rabbitmq (default kafka)
              --kafka-bootstrap H:P      use this Kafka (default: an in-process broker)
              --nats-url URL             the NATS server, JetStream on (default nats://127.0.0.1:4222)
              --rabbitmq-url URL         the RabbitMQ server (default amqp://guest:guest@127.0.0.1:5672)
              --partitions N             partitions of the Kafka topic (default 4)
              --jdbc-url URL             your consumers' database (default: an H2 server the lab starts)
              --effects-sql SQL          one row per applied effect: payment id [, account, amount in cents]
                                         (default: SELECT payment_id, account, amount FROM idem_lab_ledger, a
                                         table the lab creates)
              --account-sql SQL          run once per account before the stream, ? = the account id
                                         (e.g. INSERT INTO account (id, balance_cents) VALUES (?, 0))
              --payments N               payments in the stream (default 1000)
              --accounts N               accounts they are spread over (default 20)
              --resend-rate R            resent right after [0.05]
              --late-resend-rate R       resent 1-3 s later [0.03]
              --much-later-rate R        resent half the stream later, across kills and commits [0.02]
              --cross-rate R             a copy that another consumer fetches at the same moment [0.03]
                                         (besides the first payment of every burst)
              --no-kills                 no kill -9 of consumers
              --db-kills N               times the consumers' database sessions are ended (default 3, 0 = none)
              --ready-timeout S          wait for the consumers to join before sending (default 60)
              --drain-timeout S          wait for the drain after the stream (default 180)
              --settle S                 the effect count must stay the same this long to be drained (default 5)
              --out DIR, --seed N, --quiet

            Exit status: 0 every payment applied exactly once; 1 the verdict failed (or the run did; the report says
            why); 2 bad options or an unreachable server; 3 the consumers never drained the stream.
            """;

    /** True when {@code args} ask for a consumer lab. */
    static boolean wanted(String[] args) {
        for (String a : args) {
            if (a.equals(OPTION) || a.startsWith(OPTION + "=")) {
                return true;
            }
        }
        return false;
    }

    static ConsumerLabOptions parse(String[] args, Path workingDirectory) {
        String command = null;
        int consumers = 3;
        String broker = "kafka";
        String kafka = null;
        String nats = LabOptions.DEFAULT_NATS_URL;
        String rabbitmq = LabOptions.DEFAULT_RABBITMQ_URL;
        int partitions = 4;
        String jdbc = null;
        String effects = null;
        String accountSql = null;
        int payments = 1000;
        int accounts = 20;
        double resend = 0.05;
        double late = 0.03;
        double muchLater = 0.02;
        double cross = 0.03;
        boolean kills = true;
        int dbKills = 3;
        int ready = 60;
        int drain = 180;
        int settle = 5;
        Path out = null;
        long seed = 42;
        boolean quiet = false;
        List<String> list = new ArrayList<>(List.of(args));
        for (int i = 0; i < list.size(); i++) {
            String arg = list.get(i);
            LabOptions.Arg parsed = LabOptions.Arg.of(arg);
            String name = parsed.name();
            String inline = parsed.inline();
            switch (name) {
                case "--no-kills" -> kills = false;
                case "--quiet" -> quiet = true;
                case "--help", "-h" -> throw new LabOptions.HelpRequested();
                default -> {
                    if (!VALUED.contains(name)) {
                        throw new LabOptions.BadOptionException("unknown option '" + name + "' with " + OPTION
                                + ": run with " + OPTION + " x --help for the list of options");
                    }
                    String value = inline != null ? inline : LabOptions.value(list, ++i, name);
                    switch (name) {
                        case OPTION -> command = value;
                        case "--consumers" -> consumers = LabOptions.integer(name, value, 1, 32);
                        case "--broker" -> broker = broker(value);
                        case "--kafka-bootstrap" -> kafka = LabOptions.hostPorts(name, value, "127.0.0.1:9092");
                        case "--nats-url" -> nats = LabOptions.url(name, value, "nats", "nats://host:4222");
                        case "--rabbitmq-url" ->
                            rabbitmq = LabOptions.url(name, value, "amqp", "amqp://guest:guest@host:5672");
                        case "--partitions" -> partitions = LabOptions.integer(name, value, 2, 64);
                        case "--jdbc-url" -> jdbc = LabOptions.jdbcUrl(value);
                        case "--effects-sql" -> effects = nonBlank(name, value);
                        case "--account-sql" -> accountSql = accountSql(value);
                        case "--payments" -> payments = LabOptions.integer(name, value, 1, 1_000_000);
                        case "--accounts" -> accounts = LabOptions.integer(name, value, 1, 100_000);
                        case "--resend-rate" -> resend = LabOptions.rate(name, value);
                        case "--late-resend-rate" -> late = LabOptions.rate(name, value);
                        case "--much-later-rate" -> muchLater = LabOptions.rate(name, value);
                        case "--cross-rate" -> cross = LabOptions.rate(name, value);
                        case "--db-kills" -> dbKills = LabOptions.integer(name, value, 0, 1000);
                        case "--ready-timeout" -> ready = LabOptions.integer(name, value, 1, 3600);
                        case "--drain-timeout" -> drain = LabOptions.integer(name, value, 1, 86_400);
                        case "--settle" -> settle = LabOptions.integer(name, value, 1, 600);
                        case "--out" -> out = Path.of(value);
                        case "--seed" -> seed = LabOptions.integer(name, value, 0, Integer.MAX_VALUE);
                        default -> throw new LabOptions.BadOptionException("unknown option '" + name + "'");
                    }
                }
            }
        }
        if (command == null) {
            throw new LabOptions.BadOptionException(OPTION + " needs the command that starts one consumer");
        }
        if (kafka != null && !broker.equals("kafka")) {
            throw new LabOptions.BadOptionException("--kafka-bootstrap is for --broker kafka, not " + broker);
        }
        if (out == null) {
            out = LabOptions.defaultOut(workingDirectory);
        }
        return new ConsumerLabOptions(
                new ConsumerCommand(command),
                consumers,
                broker,
                Optional.ofNullable(kafka),
                nats,
                rabbitmq,
                partitions,
                Optional.ofNullable(jdbc),
                Optional.ofNullable(effects),
                Optional.ofNullable(accountSql),
                new PaymentWorkload.Shape(payments, accounts, resend, late, muchLater, cross),
                kills,
                dbKills,
                ready,
                drain,
                settle,
                out,
                seed,
                quiet);
    }

    private static String broker(String value) {
        String b = value.trim().toLowerCase(Locale.ROOT);
        if (LabOptions.BROKERS.contains(b)) {
            return b;
        }
        throw new LabOptions.BadOptionException("--broker '" + value + "' is not kafka, nats, rabbitmq or rocketmq");
    }

    private static String nonBlank(String name, String value) {
        if (value.isBlank()) {
            throw new LabOptions.BadOptionException(name + " is empty");
        }
        return value;
    }

    private static String accountSql(String value) {
        if (value.chars().filter(c -> c == '?').count() != 1) {
            throw new LabOptions.BadOptionException("--account-sql needs exactly one ? (the account id), e.g."
                    + " INSERT INTO account (id, balance_cents) VALUES (?, 0)");
        }
        return value;
    }
}
