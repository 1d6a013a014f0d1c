package dev.idem.demo;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The settings of the two-stage flow ({@code --flow two-stage}): orders → payments service (inbox + outbox) →
 * relay → shipping service (inbox, or none with {@code --stage-two-guard none}). Immutable.
 *
 * @param orders orders sent (every 9th twice: an application resend)
 * @param customers customers the orders are spread over (each customer's orders numbered 1, 2, …)
 * @param kafkaBootstrap an external Kafka, or empty for the in-process broker
 * @param jdbcUrl the services' database, or empty for an H2 server the lab starts
 * @param stageTwoGuarded whether the shipping service consumes through its inbox
 * @param crashAfterMax each process halts after a random N/2 to N effects (relay: acks); 0 for never
 * @param kills whether the lab {@code kill -9}s processes while the orders are sent
 */
record TwoStageOptions(
        int orders,
        int customers,
        Optional<String> kafkaBootstrap,
        Optional<String> jdbcUrl,
        boolean stageTwoGuarded,
        int crashAfterMax,
        boolean kills,
        int drainSeconds,
        int settleSeconds,
        Path out,
        long seed,
        boolean quiet) {

    static final String USAGE = """
            Usage: java -jar idem-demo.jar --flow two-stage [options]
              orders -> payments service (JdbcInbox + Outbox) -> OutboxRelay -> shipping service (JdbcInbox),
              two processes of each, killed with kill -9 and crashed in process; the verdict by SQL.
              --orders N               orders sent, every 9th twice (600)
              --customers N            customers; each one's orders are numbered for the order verdict (40)
              --kafka-bootstrap H:P    an external Kafka (default: an in-process broker)
              --jdbc-url URL           the services' database (default: an H2 server in --out)
              --stage-two-guard G      inbox (default) or none: the shipping service without its inbox
              --crash-after-max N      each process halts after N/2 to N effects (the relay: broker acks) (40; 0 off)
              --no-kills               no kill -9 storms
              --drain-timeout S        seconds to wait for every order shipped after the stream (180)
              --settle S               seconds the counts must stay the same to be drained (3)
              --out DIR, --seed N, --quiet
            Exit status: 0 pass, 1 the verdict failed, 2 bad option, 3 never drained.
            """;

    static boolean wanted(String[] args) {
        List<String> list = List.of(args);
        int i = list.indexOf("--flow");
        return list.contains("--flow=two-stage")
                || (i >= 0 && i + 1 < list.size() && list.get(i + 1).equals("two-stage"));
    }

    static TwoStageOptions parse(String[] args, Path workingDirectory) {
        int orders = 600;
        int customers = 40;
        String kafka = null;
        String jdbc = null;
        boolean guarded = true;
        int crashAfterMax = 40;
        boolean kills = true;
        int drain = 180;
        int settle = 3;
        Path out = workingDirectory.resolve("idem-demo").toFile().isDirectory()
                ? workingDirectory.resolve("idem-demo").resolve("out")
                : workingDirectory.resolve("idem-lab-out");
        long seed = 42;
        boolean quiet = false;
        List<String> list = List.of(args);
        for (int i = 0; i < list.size(); i++) {
            String name = list.get(i);
            switch (name) {
                case "--no-kills" -> kills = false;
                case "--quiet" -> quiet = true;
                case "--help", "-h" -> throw new LabOptions.HelpRequested();
                case "--flow=two-stage" -> {}
                default -> {
                    String value = LabOptions.value(list, ++i, name);
                    switch (name) {
                        case "--flow" -> {}
                        case "--orders" -> orders = LabOptions.integer(name, value, 1, 1_000_000);
                        case "--customers" -> customers = LabOptions.integer(name, value, 1, 100_000);
                        case "--kafka-bootstrap" -> kafka = LabOptions.hostPorts(name, value, "127.0.0.1:9092");
                        case "--jdbc-url" -> jdbc = LabOptions.jdbcUrl(value);
                        case "--stage-two-guard" -> guarded = guard(value);
                        case "--crash-after-max" -> crashAfterMax = LabOptions.integer(name, value, 0, 1_000_000);
                        case "--drain-timeout" -> drain = LabOptions.integer(name, value, 10, 3600);
                        case "--settle" -> settle = LabOptions.integer(name, value, 1, 600);
                        case "--out" -> out = workingDirectory.resolve(value);
                        case "--seed" -> seed = LabOptions.integer(name, value, 0, Integer.MAX_VALUE);
                        default ->
                            throw new LabOptions.BadOptionException(
                                    "unknown option '" + name
                                            + "' with --flow two-stage: run with --flow two-stage --help for the list of options");
                    }
                }
            }
        }
        if (crashAfterMax == 1) {
            throw new LabOptions.BadOptionException(
                    "--crash-after-max must be 0 (off) or at least 2, got 1: a process must apply something each life");
        }
        return new TwoStageOptions(
                orders,
                customers,
                Optional.ofNullable(kafka),
                Optional.ofNullable(jdbc),
                guarded,
                crashAfterMax,
                kills,
                drain,
                settle,
                out,
                seed,
                quiet);
    }

    private static boolean guard(String value) {
        return switch (value) {
            case "inbox" -> true;
            case "none" -> false;
            default ->
                throw new LabOptions.BadOptionException("--stage-two-guard must be inbox or none, got '" + value + "'");
        };
    }
}
