package dev.idem.demo;

import java.util.List;
import java.util.Locale;
import java.util.Map;

/** A consumer lab's result for the terminal. */
final class ConsumerTerminalReport {
    private ConsumerTerminalReport() {}

    static String render(ConsumerLabResult r) {
        EffectsVerdict v = r.verdict();
        StringBuilder sb = new StringBuilder();
        sb.append("\nConsumer lab over ")
                .append(r.broker())
                .append(": ")
                .append(r.consumers())
                .append(" consumer process(es) of\n  ")
                .append(r.command())
                .append("\n\nStream\n");
        for (LabResult.Entry e : r.workload()) {
            sb.append(line(e.label(), e.value()));
        }
        sb.append("\nFaults\n");
        sb.append(line("kill -9 of a consumer's process group", Long.toString(r.faultCount("kill -9"))));
        sb.append(line("restarts after a random pause", Long.toString(r.faultCount("restart"))));
        sb.append(line("consumer exits on their own", Long.toString(r.faultCount("exit"))));
        sb.append(line("database sessions ended (times)", Long.toString(r.faultCount("database sessions ended"))));
        sb.append("\nVerdict (").append(r.effectsSql()).append(")\n");
        sb.append(line("effects applied", Long.toString(v.effects())));
        sb.append(line("payments applied more than once", Long.toString(v.doublePayments())));
        sb.append(line("effects beyond one per payment", Long.toString(v.extraEffects())));
        sb.append(line("payments lost (never applied)", Long.toString(v.lost())));
        sb.append(line("effects of unknown payments", Long.toString(v.unknown())));
        sb.append(line("effects with another amount", Long.toString(v.wrongAmount())));
        sb.append(line("accounts whose balance is off", Long.toString(v.accountMismatches())));
        if (v.beforeRun() > 0) {
            sb.append(line("rows from before the run (ignored)", Long.toString(v.beforeRun())));
        }
        sb.append(line(
                r.drained() ? "drain time" : "gave up waiting for the drain after",
                String.format(Locale.ROOT, "%.1f s", r.drainSeconds())));
        r.doublesByCopies()
                .forEach((copies, n) ->
                        sb.append(line("  applied more than once, extra copies sent: " + copies, n + "")));
        for (Map.Entry<String, List<String>> e : v.examples().entrySet()) {
            sb.append("  e.g. ")
                    .append(e.getKey())
                    .append(": ")
                    .append(String.join(", ", e.getValue()))
                    .append('\n');
        }
        sb.append(String.format(Locale.ROOT, "\n  %s (%.1f s)\n", r.verdictLine(), r.seconds()));
        return sb.toString();
    }

    private static String line(String label, String value) {
        return String.format(Locale.ROOT, "  %-62s %12s%n", label, value);
    }
}
