package dev.idem.demo;

import java.util.List;
import java.util.Locale;
import java.util.Map;

/** A consumer lab's result as JSON, for scripts and CI. */
final class ConsumerJsonReport {
    private ConsumerJsonReport() {}

    static String render(ConsumerLabResult r) {
        EffectsVerdict v = r.verdict();
        StringBuilder sb = new StringBuilder("{\n");
        sb.append("  \"mode\": \"consumer\",\n");
        sb.append("  \"verdict\": ").append(JsonReport.str(r.verdictLine())).append(",\n");
        sb.append("  \"passed\": ").append(r.exitStatus() == 0).append(",\n");
        sb.append("  \"exit_status\": ").append(r.exitStatus()).append(",\n");
        sb.append("  \"broker\": ").append(JsonReport.str(r.broker())).append(",\n");
        sb.append("  \"command\": ").append(JsonReport.str(r.command())).append(",\n");
        sb.append("  \"consumers\": ").append(r.consumers()).append(",\n");
        sb.append("  \"effects_sql\": ").append(JsonReport.str(r.effectsSql())).append(",\n");
        sb.append("  \"drained\": ").append(r.drained()).append(",\n");
        sb.append("  \"drain_seconds\": ").append(dbl(r.drainSeconds())).append(",\n");
        sb.append("  \"seconds\": ").append(dbl(r.seconds())).append(",\n");
        sb.append("  \"effects\": ").append(v.effects()).append(",\n");
        sb.append("  \"double\": ").append(v.doublePayments()).append(",\n");
        sb.append("  \"extra_effects\": ").append(v.extraEffects()).append(",\n");
        sb.append("  \"lost\": ").append(v.lost()).append(",\n");
        sb.append("  \"unknown\": ").append(v.unknown()).append(",\n");
        sb.append("  \"wrong_amount\": ").append(v.wrongAmount()).append(",\n");
        sb.append("  \"account_mismatches\": ").append(v.accountMismatches()).append(",\n");
        sb.append("  \"rows_before_run\": ").append(v.beforeRun()).append(",\n");
        sb.append("  \"doubles_by_copies\": {");
        boolean firstCopy = true;
        for (Map.Entry<String, Long> e : r.doublesByCopies().entrySet()) {
            sb.append(firstCopy ? "" : ", ")
                    .append(JsonReport.str(e.getKey()))
                    .append(": ")
                    .append(e.getValue());
            firstCopy = false;
        }
        sb.append("},\n");
        sb.append("  \"faults\": {");
        String[] kinds = {"kill -9", "restart", "exit", "database sessions ended"};
        for (int i = 0; i < kinds.length; i++) {
            sb.append(i == 0 ? "" : ", ")
                    .append(JsonReport.str(kinds[i]))
                    .append(": ")
                    .append(r.faultCount(kinds[i]));
        }
        sb.append("},\n  \"stream\": ").append(JsonReport.entries(r.workload())).append(",\n");
        sb.append("  \"environment\": ")
                .append(JsonReport.entries(r.environment()))
                .append(",\n");
        sb.append("  \"timeline\": [");
        boolean first = true;
        for (FaultLog.Event e : r.faults()) {
            sb.append(first ? "\n" : ",\n")
                    .append("    {\"at\": ")
                    .append(JsonReport.str(e.at().toString()))
                    .append(", \"seconds\": ")
                    .append(dbl(e.secondsIntoRun()))
                    .append(", \"kind\": ")
                    .append(JsonReport.str(e.kind()))
                    .append(", \"detail\": ")
                    .append(JsonReport.str(e.detail()))
                    .append('}');
            first = false;
        }
        sb.append("\n  ],\n  \"examples\": {");
        first = true;
        for (Map.Entry<String, List<String>> e : v.examples().entrySet()) {
            sb.append(first ? "" : ", ").append(JsonReport.str(e.getKey())).append(": [");
            for (int i = 0; i < e.getValue().size(); i++) {
                sb.append(i == 0 ? "" : ", ").append(JsonReport.str(e.getValue().get(i)));
            }
            sb.append(']');
            first = false;
        }
        return sb.append("}\n}\n").toString();
    }

    private static String dbl(double d) {
        return String.format(Locale.ROOT, "%.3f", d);
    }
}
