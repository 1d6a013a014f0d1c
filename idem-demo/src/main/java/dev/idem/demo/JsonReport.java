package dev.idem.demo;

import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The lab's result as JSON, for scripts. */
final class JsonReport {
    private JsonReport() {}

    static String render(LabResult r) {
        StringBuilder sb = new StringBuilder("{\n");
        sb.append("  \"verdict\": ").append(str(r.verdict())).append(",\n");
        sb.append("  \"guards_held\": ").append(r.guardsHeld()).append(",\n");
        sb.append("  \"unguarded_damaged\": ").append(r.unguardedDamaged()).append(",\n");
        sb.append("  \"broker\": ").append(str(r.broker())).append(",\n");
        sb.append("  \"orders\": ").append(r.orders()).append(",\n");
        sb.append("  \"paid_orders\": ").append(r.paidOrders()).append(",\n");
        sb.append("  \"messages\": ").append(r.messages()).append(",\n");
        sb.append("  \"records_in_topic\": ").append(r.recordsInTopic()).append(",\n");
        sb.append("  \"seconds\": ").append(dbl(r.seconds())).append(",\n");
        sb.append("  \"environment\": ").append(entries(r.environment())).append(",\n");
        sb.append("  \"injected\": ").append(entries(r.injected())).append(",\n");
        sb.append("  \"verification_sql\": {");
        boolean first = true;
        for (Map.Entry<String, String> q : Verification.queries().entrySet()) {
            sb.append(first ? "\n" : ",\n")
                    .append("    ")
                    .append(str(q.getKey()))
                    .append(": ");
            sb.append(str(q.getValue()));
            first = false;
        }
        sb.append("\n  },\n  \"strategies\": [");
        first = true;
        for (StrategyResult s : r.strategies()) {
            sb.append(first ? "\n" : ",\n").append("    {");
            sb.append("\"id\": ").append(str(s.id()));
            sb.append(", \"description\": ").append(str(s.description()));
            sb.append(", \"guarded\": ").append(s.guarded());
            sb.append(", \"finished\": ").append(s.finished());
            sb.append(", \"correct\": ").append(s.correct());
            sb.append(", \"damaged\": ").append(s.damaged());
            sb.append(", \"failure\": ").append(str(s.failure()));
            sb.append(", \"sql\": {");
            boolean f2 = true;
            for (Map.Entry<String, Long> e : s.sql().entrySet()) {
                sb.append(f2 ? "" : ", ").append(str(e.getKey())).append(": ").append(e.getValue());
                f2 = false;
            }
            sb.append("}");
            sb.append(", \"deliveries\": ").append(s.deliveries());
            sb.append(", \"duplicates_suppressed\": ").append(s.duplicatesSuppressed());
            sb.append(", \"retries\": ").append(s.retries());
            sb.append(", \"crashes\": ").append(s.crashes());
            sb.append(", \"second_copies\": ").append(s.secondCopies());
            sb.append(", \"dead_letters\": ").append(s.deadLetters());
            sb.append(", \"seconds\": ").append(dbl(s.seconds()));
            sb.append(", \"records_per_second\": ").append(dbl(s.throughput()));
            sb.append("}");
            first = false;
        }
        sb.append("\n  ]\n}\n");
        return sb.toString();
    }

    static String entries(List<LabResult.Entry> entries) {
        StringBuilder sb = new StringBuilder("[");
        boolean first = true;
        for (LabResult.Entry e : entries) {
            sb.append(first ? "" : ", ")
                    .append("{\"label\": ")
                    .append(str(e.label()))
                    .append(", \"value\": ")
                    .append(str(e.value()))
                    .append("}");
            first = false;
        }
        return sb.append("]").toString();
    }

    private static String dbl(double d) {
        return String.format(Locale.ROOT, "%.3f", d);
    }

    static String str(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.append('"').toString();
    }
}
