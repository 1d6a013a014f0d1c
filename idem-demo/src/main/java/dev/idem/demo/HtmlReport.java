package dev.idem.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.DoubleFunction;

/** The lab's result as one self-contained HTML page: inline CSS and SVG charts, no script, no network. */
final class HtmlReport {
    private HtmlReport() {}

    private static final String RED = "#c0392b";
    private static final String GREEN = "#27ae60";
    private static final String BLUE = "#2e6da4";
    private static final String GREY = "#95a5a6";

    /** One bar. */
    record Bar(String label, double value, String color) {}

    static String render(LabResult r) {
        StringBuilder h = new StringBuilder();
        h.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
                .append("<title>Idem double-charge lab</title><style>")
                .append("body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;")
                .append(
                        "color:#222;max-width:1200px}h1{margin-bottom:4px}h2{margin-top:28px;border-bottom:1px solid #ddd}")
                .append(
                        "table{border-collapse:collapse;font-size:14px}td,th{padding:4px 10px;border-bottom:1px solid #eee;")
                .append("text-align:right}td:first-child,th:first-child{text-align:left}.ok{color:")
                .append(GREEN)
                .append(";font-weight:bold}.bad{color:")
                .append(RED)
                .append(
                        ";font-weight:bold}.verdict{font-size:20px;padding:10px 14px;border-radius:6px;display:inline-block}")
                .append(".pass{background:#e8f6ee}.fail{background:#fbeaea}code,pre{font-size:12px;background:#f6f6f6}")
                .append("pre{padding:8px;white-space:pre-wrap}.charts{display:flex;flex-wrap:wrap;gap:18px}")
                .append("</style></head><body>\n");
        h.append("<h1>Idem double-charge lab</h1>\n");
        h.append("<p>")
                .append(String.format(
                        Locale.ROOT,
                        "Over %s: %,d orders (%,d to be paid exactly once), %,d messages, %,d records in the topic,"
                                + " %.1f s.",
                        r.broker(),
                        r.orders(),
                        r.paidOrders(),
                        r.messages(),
                        r.recordsInTopic(),
                        r.seconds()))
                .append("</p>\n");
        h.append("<p class=\"verdict ")
                .append(r.guardsHeld() ? "pass" : "fail")
                .append("\">")
                .append(esc(r.verdict()))
                .append("</p>\n");
        for (StrategyResult s : r.strategies()) {
            if (!s.guarded()) {
                h.append("<p>Without a guard: <span class=\"bad\">")
                        .append(TerminalTable.num(s.doubleCharged()))
                        .append(" orders charged more than once</span>, ")
                        .append(TerminalTable.money(s.overcharged()))
                        .append(" taken too much, ")
                        .append(TerminalTable.num(s.wrongState()))
                        .append(" orders in the wrong final state, ")
                        .append(TerminalTable.num(s.lostPayments()))
                        .append(" payments lost.</p>\n");
            }
        }

        h.append("<h2>Charts</h2><div class=\"charts\">\n");
        List<Bar> injected = new ArrayList<>();
        for (LabResult.Entry e : r.injected().subList(2, r.injected().size())) {
            if (e.value().startsWith("n/a")) {
                continue;
            }
            injected.add(new Bar(e.label().replaceAll(" \\(.*\\)$", ""), Double.parseDouble(e.value()), BLUE));
        }
        h.append(chart("What was injected", injected, v -> String.format(Locale.ROOT, "%,.0f", v)));
        List<Bar> applied = new ArrayList<>();
        applied.add(new Bar("expected (paid orders)", r.paidOrders(), GREY));
        for (StrategyResult s : r.strategies()) {
            applied.add(new Bar(s.id(), s.charges(), s.charges() == r.paidOrders() ? GREEN : RED));
        }
        h.append(chart("Charges applied (ledger rows)", applied, v -> String.format(Locale.ROOT, "%,.0f", v)));
        List<Bar> suppressed = new ArrayList<>();
        for (StrategyResult s : r.strategies()) {
            suppressed.add(new Bar(s.id(), s.duplicatesSuppressed(), BLUE));
        }
        h.append(chart("Duplicates suppressed by the guard", suppressed, v -> String.format(Locale.ROOT, "%,.0f", v)));
        List<Bar> doubles = new ArrayList<>();
        for (StrategyResult s : r.strategies()) {
            doubles.add(new Bar(s.id(), s.doubleCharged(), s.doubleCharged() == 0 ? GREEN : RED));
        }
        h.append(chart("Orders charged more than once", doubles, v -> String.format(Locale.ROOT, "%,.0f", v)));
        List<Bar> throughput = new ArrayList<>();
        for (StrategyResult s : r.strategies()) {
            throughput.add(new Bar(s.id(), s.throughput(), BLUE));
        }
        h.append(chart(
                "Throughput (records/s, all groups at once)", throughput, v -> String.format(Locale.ROOT, "%,.0f", v)));
        h.append("</div>\n");

        h.append("<h2>Results</h2>\n<table><tr><th>strategy</th><th>double-charged orders</th>")
                .append("<th>overcharged</th><th>lost payments</th><th>wrong final state</th><th>charges</th>")
                .append("<th>duplicates suppressed</th><th>retries</th><th>dead letters</th><th>crashes</th>")
                .append("<th>records/s</th><th>verdict</th></tr>\n");
        for (StrategyResult s : r.strategies()) {
            String v = TerminalTable.verdict(s);
            h.append("<tr><td>")
                    .append(esc(s.id()))
                    .append("</td><td>")
                    .append(TerminalTable.num(s.doubleCharged()))
                    .append("</td><td>")
                    .append(TerminalTable.money(s.overcharged()))
                    .append("</td><td>")
                    .append(TerminalTable.num(s.lostPayments()))
                    .append("</td><td>")
                    .append(TerminalTable.num(s.wrongState()))
                    .append("</td><td>")
                    .append(TerminalTable.num(s.charges()))
                    .append("</td><td>")
                    .append(TerminalTable.num(s.duplicatesSuppressed()))
                    .append("</td><td>")
                    .append(TerminalTable.num(s.retries()))
                    .append("</td><td>")
                    .append(TerminalTable.num(s.deadLetters()))
                    .append("</td><td>")
                    .append(TerminalTable.num(s.crashes()))
                    .append("</td><td>")
                    .append(String.format(Locale.ROOT, "%,.0f", s.throughput()))
                    .append("</td><td class=\"")
                    .append(v.equals("OK") || v.startsWith("DAMAGED") ? (s.guarded() ? "ok" : "bad") : "bad")
                    .append("\">")
                    .append(esc(v))
                    .append("</td></tr>\n");
        }
        h.append("</table>\n<h2>Strategies</h2>\n<table>");
        for (StrategyResult s : r.strategies()) {
            h.append("<tr><td>")
                    .append(esc(s.id()))
                    .append("</td><td style=\"text-align:left\">")
                    .append(esc(s.description()))
                    .append("</td></tr>");
        }
        h.append("</table>\n");

        h.append("<h2>Injected</h2>\n<table>");
        for (LabResult.Entry e : r.injected()) {
            h.append("<tr><td>")
                    .append(esc(e.label()))
                    .append("</td><td>")
                    .append(esc(e.value()))
                    .append("</td></tr>");
        }
        h.append("</table>\n<h2>Environment</h2>\n<table>");
        for (LabResult.Entry e : r.environment()) {
            h.append("<tr><td>")
                    .append(esc(e.label()))
                    .append("</td><td style=\"text-align:left\">")
                    .append(esc(e.value()))
                    .append("</td></tr>");
        }
        h.append("</table>\n<h2>Verification SQL</h2>\n<p>Run on each strategy's tables, replacing <code>{p}</code> ")
                .append("with <code>lab_none</code>, <code>lab_inbox</code>, <code>lab_lease_memory</code>, ")
                .append(
                        "<code>lab_lease_redis</code>, <code>lab_state_machine</code> or <code>lab_version</code>.</p>\n");
        for (Map.Entry<String, String> q : Verification.queries().entrySet()) {
            h.append("<p><b>")
                    .append(esc(q.getKey()))
                    .append("</b></p><pre>")
                    .append(esc(q.getValue()))
                    .append("</pre>\n");
        }
        h.append("</body></html>\n");
        return h.toString();
    }

    /** A horizontal bar chart as inline SVG. */
    static String chart(String title, List<Bar> bars, DoubleFunction<String> format) {
        int labelWidth = 340;
        int barArea = 150;
        int row = 24;
        int top = 30;
        int width = labelWidth + barArea + 80;
        int height = top + row * bars.size() + 10;
        double max = bars.stream().mapToDouble(Bar::value).max().orElse(0);
        StringBuilder s = new StringBuilder();
        s.append(String.format(
                Locale.ROOT,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\""
                        + " role=\"img\" aria-label=\"%s\">",
                width,
                height,
                width,
                height,
                esc(title)));
        s.append(String.format(
                Locale.ROOT,
                "<text x=\"0\" y=\"18\" font-size=\"15\" font-weight=\"bold\" font-family=\"sans-serif\">%s</text>",
                esc(title)));
        for (int i = 0; i < bars.size(); i++) {
            Bar b = bars.get(i);
            int y = top + i * row;
            int w = max <= 0 ? 0 : (int) Math.round(barArea * b.value() / max);
            if (b.value() > 0 && w < 2) {
                w = 2;
            }
            s.append(String.format(
                    Locale.ROOT,
                    "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\" font-family=\"sans-serif\">%s</text>",
                    labelWidth - 8,
                    y + 15,
                    esc(b.label())));
            s.append(String.format(
                    Locale.ROOT,
                    "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>",
                    labelWidth,
                    y + 3,
                    w,
                    row - 6,
                    b.color()));
            s.append(String.format(
                    Locale.ROOT,
                    "<text x=\"%d\" y=\"%d\" font-size=\"12\" font-family=\"sans-serif\">%s</text>",
                    labelWidth + w + 6,
                    y + 15,
                    esc(format.apply(b.value()))));
        }
        return s.append("</svg>\n").toString();
    }

    static String esc(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
