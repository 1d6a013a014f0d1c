package dev.idem.bench.e2e;

import dev.idem.bench.e2e.EndToEnd.ClaimsMeasurement;
import dev.idem.bench.e2e.EndToEnd.Measurement;
import dev.idem.bench.e2e.EndToEnd.Options;
import dev.idem.bench.e2e.EndToEnd.Scenario;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.OptionalDouble;
import java.util.Set;
import java.util.stream.Collectors;

/** The Markdown report: throughput with ratios and correctness, claims alone, the targets. */
final class Tables {
    private Tables() {}

    static String markdown(
            Options o,
            List<Measurement> all,
            List<ClaimsMeasurement> claims,
            List<Contender> contenders,
            List<String> skipped,
            List<String> facts) {
        StringBuilder md = new StringBuilder();
        md.append("Command: `java -cp idem-bench/target/benchmarks.jar dev.idem.bench.e2e.EndToEnd ")
                .append(o.command())
                .append("`\n\n");
        for (String fact : facts) {
            if (!fact.isBlank()) {
                md.append("- ").append(fact).append('\n');
            }
        }
        var shape = o.shape();
        md.append(String.format(
                Locale.ROOT,
                "- Workload: %,d deliveries (%.0f%% copies of earlier payments, %.0f%% of those racing their original"
                        + " from a second thread), %,d accounts, medians of %d interleaved rounds; faults (own runs,"
                        + " once): %.2f%% handler failures, %.2f%% crashes inside the handler, %.2f%% crashes after the"
                        + " commit, before the ack; lease of the lease stores %d ms; before the timed rounds every"
                        + " contender ran once untimed on %,d deliveries (JIT warm-up); the batched contenders' rounds"
                        + " (clean runs) have %,d deliveries, as a batch of %d per transaction ends a round of the"
                        + " others' size too soon to be timed\n",
                shape.deliveries(),
                shape.duplicates() * 100,
                shape.racing() * 100,
                shape.accounts(),
                o.rounds(),
                shape.handlerFailures() * 100,
                shape.crashesInHandler() * 100,
                shape.crashesAfterCommit() * 100,
                o.lease().toMillis(),
                o.warmup(),
                o.batchDeliveries(),
                o.batch()));
        for (String s : skipped) {
            md.append("- Left out (not reachable): ").append(s).append('\n');
        }
        List<Scenario> speed = scenarios(all, false);
        List<Scenario> faulty = scenarios(all, true);
        md.append("\n| contender |");
        speed.forEach(s -> md.append(' ').append(s.title()).append(" |"));
        faulty.forEach(s -> md.append(" under faults: ")
                .append(s.title().replace(", faults", ""))
                .append(" |"));
        md.append("\n|---|");
        speed.forEach(s -> md.append("---|"));
        faulty.forEach(s -> md.append("---|"));
        md.append('\n');
        for (Contender c : contenders) {
            md.append("| ").append(c.label()).append(" |");
            for (Scenario s : speed) {
                md.append(' ').append(speedCell(all, c.id(), s)).append(" |");
            }
            for (Scenario s : faulty) {
                md.append(' ').append(faultCell(all, c.id(), s)).append(" |");
            }
            md.append('\n');
        }
        if (!claims.isEmpty()) {
            Set<Integer> threads = claims.stream()
                    .map(ClaimsMeasurement::threads)
                    .collect(Collectors.toCollection(LinkedHashSet::new));
            md.append("\n| claims alone (no business transaction), batches of ")
                    .append(o.batch())
                    .append(" |");
            threads.forEach(t -> md.append(" Redis ").append(t).append(t == 1 ? " thread |" : " threads |"));
            md.append("\n|---|");
            threads.forEach(t -> md.append("---|"));
            md.append('\n');
            for (String id : List.of("redis-setnx-pipelined", "idem-redis-claimall")) {
                md.append("| ")
                        .append(
                                id.equals("redis-setnx-pipelined")
                                        ? "raw pipelined `SET NX PX` (one pipeline per batch)"
                                        : "Idem `RedisStore.claimAll` (one script per batch)")
                        .append(" |");
                for (int t : threads) {
                    double rate = claimsMedian(claims, id, t);
                    double raw = claimsMedian(claims, "redis-setnx-pipelined", t);
                    boolean wrong = claims.stream()
                            .anyMatch(m -> m.contender().equals(id)
                                    && m.threads() == t
                                    && !m.result().correct());
                    md.append(String.format(Locale.ROOT, " %,.0f claims/s", rate));
                    if (!id.equals("redis-setnx-pipelined")) {
                        md.append(String.format(Locale.ROOT, " (%.2f×)", rate / raw));
                    }
                    md.append(wrong ? " **wrong count of keys won**" : "").append(" |");
                }
                md.append('\n');
            }
        }
        md.append(costs(all, contenders, speed));
        md.append(targets(all, claims, speed, faulty));
        return md.toString();
    }

    /**
     * Where the cost goes, medians over the rounds: database round trips per single new and per single duplicate
     * delivery (counted on the handling thread; a batch contender shows its round trips per message instead), CPU per
     * message of this JVM, of the database server and of Redis, and Redis commands per message.
     */
    private static String costs(List<Measurement> all, List<Contender> contenders, List<Scenario> speed) {
        StringBuilder md = new StringBuilder();
        for (Scenario s : speed) {
            md.append("\n| ")
                    .append(s.title())
                    .append(": cost per message | DB round trips new / duplicate | JVM CPU | DB CPU | Redis CPU |")
                    .append(" Redis commands |\n|---|---|---|---|---|---|\n");
            for (Contender c : contenders) {
                List<Measurement> runs = runs(all, c.id(), s).stream()
                        .filter(m -> m.run().finished())
                        .toList();
                if (runs.isEmpty()) {
                    continue;
                }
                double n = runs.get(0).run().messages();
                String trips = c.batched()
                        ? String.format(
                                Locale.ROOT,
                                "%.2f per message",
                                med(runs, m -> m.costs().roundTrips() / n))
                        : String.format(
                                Locale.ROOT,
                                "%.2f / %.2f",
                                med(runs, m -> m.run().tripsPerNew()),
                                med(runs, m -> m.run().tripsPerDuplicate()));
                md.append(String.format(
                        Locale.ROOT,
                        "| %s | %s | %.0f µs | %.0f µs | %.0f µs | %.2f |\n",
                        c.label(),
                        trips,
                        med(runs, m -> m.costs().jvmNanos() / 1e3 / n),
                        med(runs, m -> m.costs().databaseNanos() / 1e3 / n),
                        med(runs, m -> m.costs().redisNanos() / 1e3 / n),
                        med(runs, m -> m.costs().redisCommands() / n)));
            }
        }
        return md.toString();
    }

    private static double med(List<Measurement> runs, java.util.function.ToDoubleFunction<Measurement> f) {
        return EndToEnd.median(runs.stream().map(m -> f.applyAsDouble(m)).toList());
    }

    private static List<Scenario> scenarios(List<Measurement> all, boolean faults) {
        return all.stream()
                .map(Measurement::scenario)
                .filter(s -> s.faults() == faults)
                .distinct()
                .toList();
    }

    static OptionalDouble median(List<Measurement> all, String id, Scenario s) {
        List<Double> rates = all.stream()
                .filter(m -> m.contender().equals(id)
                        && m.scenario().equals(s)
                        && m.run().finished())
                .map(m -> m.run().perSecond())
                .toList();
        return rates.isEmpty() ? OptionalDouble.empty() : OptionalDouble.of(EndToEnd.median(rates));
    }

    private static double claimsMedian(List<ClaimsMeasurement> claims, String id, int threads) {
        return EndToEnd.median(claims.stream()
                .filter(m -> m.contender().equals(id) && m.threads() == threads)
                .map(m -> m.result().perSecond())
                .toList());
    }

    private static String speedCell(List<Measurement> all, String id, Scenario s) {
        List<Measurement> runs = runs(all, id, s);
        if (runs.isEmpty()) {
            return "—";
        }
        OptionalDouble rate = median(all, id, s);
        OptionalDouble base = median(all, "no-guard", s);
        StringBuilder cell = new StringBuilder();
        if (rate.isPresent()) {
            cell.append(String.format(Locale.ROOT, "%,.0f/s", rate.getAsDouble()));
            if (!id.equals("no-guard") && base.isPresent()) {
                cell.append(String.format(Locale.ROOT, " (%.2f×)", rate.getAsDouble() / base.getAsDouble()));
            }
            var rates = runs.stream()
                    .filter(m -> m.run().finished())
                    .mapToDouble(m -> m.run().perSecond())
                    .summaryStatistics();
            if (rates.getCount() > 1) {
                cell.append(String.format(Locale.ROOT, " [%,.0f–%,.0f]", rates.getMin(), rates.getMax()));
            }
        }
        String wrong = worst(runs);
        return wrong.isEmpty() ? cell.toString() : cell + " ✗ " + wrong;
    }

    private static String faultCell(List<Measurement> all, String id, Scenario s) {
        List<Measurement> runs = runs(all, id, s);
        if (runs.isEmpty()) {
            return "—";
        }
        String wrong = worst(runs);
        return wrong.isEmpty() ? "0 double, 0 lost" : wrong;
    }

    private static List<Measurement> runs(List<Measurement> all, String id, Scenario s) {
        return all.stream()
                .filter(m -> m.contender().equals(id) && m.scenario().equals(s))
                .toList();
    }

    /** The worst run's errors, e.g. "**12 lost**, **3 double**, 2 accounts off"; empty when all were right. */
    private static String worst(List<Measurement> runs) {
        Measurement worst = null;
        int worstScore = 0;
        for (Measurement m : runs) {
            int score = m.check() == null
                    ? Integer.MAX_VALUE
                    : m.check().lost()
                            + m.check().doubled()
                            + m.check().accountsOff()
                            + m.run().deadLettered();
            if (score > worstScore) {
                worst = m;
                worstScore = score;
            }
        }
        if (worst == null) {
            return "";
        }
        if (worst.check() == null) {
            return "**did not finish** (" + worst.run().firstError() + ")";
        }
        List<String> parts = new ArrayList<>();
        if (worst.check().doubled() > 0) {
            parts.add("**" + worst.check().doubled() + " double**");
        }
        if (worst.check().lost() > 0) {
            parts.add("**" + worst.check().lost() + " lost**");
        }
        if (worst.check().accountsOff() > 0) {
            parts.add(worst.check().accountsOff() + " balances off");
        }
        if (worst.run().deadLettered() > 0) {
            parts.add(worst.run().deadLettered() + " dead-lettered");
        }
        return String.join(", ", parts);
    }

    private static String targets(
            List<Measurement> all, List<ClaimsMeasurement> claims, List<Scenario> speed, List<Scenario> faulty) {
        StringBuilder md = new StringBuilder(
                "\n| target (issue 24) | measured: median ratio [min–max of the rounds' ratios] | |\n|---|---|---|\n");
        for (Scenario s : speed) {
            ratio(md, all, s, "idem-inbox", "hand", 0.95, "`JdbcInbox.handle` ≥ 0.95× hand-written");
            ratio(md, all, s, "idem-inbox-batch", "hand-batch", 0.9, "`handleBatch` ≥ 0.9× hand-written JDBC batch");
            ratio(md, all, s, "idem-redis", "redis-setnx", 0.9, "`Guard` + `RedisStore` ≥ 0.9× `SET NX` recipe");
            ratio(md, all, s, "idem-jdbc-lease", "camel-jdbc", 1.0, "`Guard` + `JdbcStore` ≥ 1.0× Camel");
        }
        Set<Integer> threads =
                claims.stream().map(ClaimsMeasurement::threads).collect(Collectors.toCollection(LinkedHashSet::new));
        for (int t : threads) {
            double r =
                    claimsMedian(claims, "idem-redis-claimall", t) / claimsMedian(claims, "redis-setnx-pipelined", t);
            md.append(String.format(
                    Locale.ROOT,
                    "| Redis %d thread(s): `RedisStore.claimAll` ≥ 0.8× raw pipelined `SET NX PX` | %.2f× | %s |\n",
                    t,
                    r,
                    r >= 0.8 ? "met" : "**missed**"));
        }
        for (Scenario s : faulty) {
            List<String> failing = all.stream()
                    .filter(m -> m.scenario().equals(s) && m.contender().startsWith("idem-") && !m.correct())
                    .map(Measurement::contender)
                    .distinct()
                    .toList();
            md.append("| ")
                    .append(s.title())
                    .append(": every Idem contender 0 double, 0 lost | ")
                    .append(failing.isEmpty() ? "all correct" : "wrong: " + String.join(", ", failing))
                    .append(" | ")
                    .append(failing.isEmpty() ? "met" : "**missed**")
                    .append(" |\n");
        }
        return md.toString();
    }

    private static void ratio(
            StringBuilder md, List<Measurement> all, Scenario s, String a, String b, double want, String what) {
        OptionalDouble x = median(all, a, s);
        OptionalDouble y = median(all, b, s);
        if (x.isEmpty() || y.isEmpty()) {
            return;
        }
        double r = x.getAsDouble() / y.getAsDouble();
        var perRound = roundRatios(all, s, a, b).summaryStatistics();
        String spread = perRound.getCount() > 1
                ? String.format(Locale.ROOT, " [%.2f–%.2f]", perRound.getMin(), perRound.getMax())
                : "";
        md.append(String.format(
                Locale.ROOT,
                "| %s: %s | %.2f×%s | %s |\n",
                s.title(),
                what,
                r,
                spread,
                r >= want ? "met" : "**missed** by " + String.format(Locale.ROOT, "%.0f%%", (1 - r / want) * 100)));
    }

    /** The ratio of {@code a} to {@code b} in each round both finished (the two ran in the same round). */
    private static java.util.stream.DoubleStream roundRatios(List<Measurement> all, Scenario s, String a, String b) {
        return all.stream()
                .filter(m -> m.contender().equals(a)
                        && m.scenario().equals(s)
                        && m.run().finished())
                .flatMapToDouble(m -> all.stream()
                        .filter(o -> o.contender().equals(b)
                                && o.scenario().equals(s)
                                && o.round() == m.round()
                                && o.run().finished())
                        .mapToDouble(o -> m.run().perSecond() / o.run().perSecond()));
    }
}
