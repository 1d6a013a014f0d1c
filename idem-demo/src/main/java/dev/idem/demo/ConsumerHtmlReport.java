package dev.idem.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** A consumer lab's result as one self-contained HTML page: inline CSS and SVG charts, no script, no network. */
final class ConsumerHtmlReport {
    private ConsumerHtmlReport() {}

    private static final String RED = "#c0392b";
    private static final String GREEN = "#27ae60";
    private static final String BLUE = "#2e6da4";
    private static final String GREY = "#95a5a6";

    static String render(ConsumerLabResult r) {
        EffectsVerdict v = r.verdict();
        boolean pass = r.exitStatus() == 0;
        StringBuilder h = new StringBuilder();
        h.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
                .append("<title>Idem consumer lab</title><style>")
                .append("body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;")
                .append("color:#222;max-width:1200px}h2{margin-top:28px;border-bottom:1px solid #ddd}")
                .append("table{border-collapse:collapse;font-size:14px}td,th{padding:4px 10px;")
                .append("border-bottom:1px solid #eee;text-align:left}td.n{text-align:right}")
                .append(".verdict{font-size:20px;padding:10px 14px;border-radius:6px;display:inline-block}")
                .append(".pass{background:#e8f6ee}.fail{background:#fbeaea}code,pre{font-size:12px;")
                .append("background:#f6f6f6}pre{padding:8px;white-space:pre-wrap}")
                .append(".charts{display:flex;flex-wrap:wrap;gap:18px}</style></head><body>\n");
        h.append("<h1>Idem consumer lab</h1>\n<p>")
                .append(String.format(
                        Locale.ROOT,
                        "Over %s: %d consumer process(es), %s payments, %.1f s. Command: ",
                        HtmlReport.esc(r.broker()),
                        r.consumers(),
                        HtmlReport.esc(r.workload().get(0).value()),
                        r.seconds()))
                .append("<code>")
                .append(HtmlReport.esc(r.command()))
                .append("</code></p>\n<p class=\"verdict ")
                .append(pass ? "pass" : "fail")
                .append("\">")
                .append(HtmlReport.esc(r.verdictLine()))
                .append("</p>\n<h2>Charts</h2><div class=\"charts\">\n");
        List<HtmlReport.Bar> verdict = new ArrayList<>();
        verdict.add(
                new HtmlReport.Bar("payments applied more than once", v.doublePayments(), color(v.doublePayments())));
        verdict.add(new HtmlReport.Bar("payments lost", v.lost(), color(v.lost())));
        verdict.add(new HtmlReport.Bar("effects of unknown payments", v.unknown(), color(v.unknown())));
        verdict.add(new HtmlReport.Bar(
                "accounts whose balance is off", v.accountMismatches(), color(v.accountMismatches())));
        h.append(HtmlReport.chart("The verdict (0 everywhere to pass)", verdict, ConsumerHtmlReport::count));
        List<HtmlReport.Bar> stream = new ArrayList<>();
        for (LabResult.Entry e : r.workload()) {
            if (e.value().matches("[0-9]+")) {
                stream.add(new HtmlReport.Bar(e.label(), Double.parseDouble(e.value()), BLUE));
            }
        }
        h.append(HtmlReport.chart("The stream", stream, ConsumerHtmlReport::count));
        List<HtmlReport.Bar> faults = List.of(
                new HtmlReport.Bar("kill -9 (process group)", r.faultCount("kill -9"), RED),
                new HtmlReport.Bar("restarts", r.faultCount("restart"), GREY),
                new HtmlReport.Bar("exits on their own", r.faultCount("exit"), GREY),
                new HtmlReport.Bar("database sessions ended", r.faultCount("database sessions ended"), RED));
        h.append(HtmlReport.chart("The faults", faults, ConsumerHtmlReport::count));
        h.append(timeline(r)).append("</div>\n");

        h.append("<h2>Verdict</h2>\n<p>By <code>")
                .append(HtmlReport.esc(r.effectsSql()))
                .append("</code></p><table>");
        row(h, "effects applied", v.effects());
        row(h, "payments applied more than once", v.doublePayments());
        row(h, "effects beyond one per payment", v.extraEffects());
        row(h, "payments lost (never applied)", v.lost());
        row(h, "effects of unknown payments", v.unknown());
        row(h, "effects with another amount", v.wrongAmount());
        row(h, "accounts whose balance is off", v.accountMismatches());
        row(h, "rows from before the run (ignored)", v.beforeRun());
        h.append(String.format(
                Locale.ROOT,
                "<tr><td>%s</td><td class=\"n\">%.1f s</td></tr></table>\n",
                r.drained() ? "drain time" : "gave up waiting for the drain after",
                r.drainSeconds()));
        if (!r.doublesByCopies().isEmpty()) {
            h.append("<p>Payments applied more than once, by the extra copies the lab sent of them (none: sent once,")
                    .append(" applied again after a redelivery):</p><table>");
            r.doublesByCopies().forEach((copies, n) -> row(h, copies, n));
            h.append("</table>\n");
        }
        for (Map.Entry<String, List<String>> e : v.examples().entrySet()) {
            h.append("<p>e.g. ")
                    .append(HtmlReport.esc(e.getKey()))
                    .append(": <code>")
                    .append(HtmlReport.esc(String.join(", ", e.getValue())))
                    .append("</code></p>\n");
        }
        h.append("<h2>Stream</h2>\n<table>");
        entries(h, r.workload());
        h.append("</table>\n<h2>Faults and exits, in order</h2>\n<table><tr><th>time (UTC)</th><th>s</th>")
                .append("<th>what</th><th>detail</th></tr>");
        for (FaultLog.Event e : r.faults()) {
            h.append(String.format(
                    Locale.ROOT,
                    "<tr><td>%s</td><td class=\"n\">%.1f</td><td>%s</td><td>%s</td></tr>",
                    e.at(),
                    e.secondsIntoRun(),
                    HtmlReport.esc(e.kind()),
                    HtmlReport.esc(e.detail())));
        }
        h.append("</table>\n<h2>Environment</h2>\n<table>");
        entries(h, r.environment());
        h.append("</table>\n</body></html>\n");
        return h.toString();
    }

    /** The faults along the run's time axis: one tick per kill (red), session end (orange), restart (grey). */
    private static String timeline(ConsumerLabResult r) {
        double end = Math.max(1, r.seconds());
        int width = 560;
        int height = 90;
        StringBuilder s = new StringBuilder(String.format(
                Locale.ROOT,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" role=\"img\""
                        + " aria-label=\"faults over time\"><text x=\"0\" y=\"18\" font-size=\"15\" font-weight=\"bold\""
                        + " font-family=\"sans-serif\">Faults over the run (%.0f s)</text>"
                        + "<line x1=\"0\" y1=\"60\" x2=\"%d\" y2=\"60\" stroke=\"#999\"/>",
                width,
                height,
                end,
                width));
        for (FaultLog.Event e : r.faults()) {
            String color = switch (e.kind()) {
                case "kill -9" -> RED;
                case "database sessions ended" -> "#e67e22";
                case "restart", "exit" -> GREY;
                case "stream end", "drained", "never drained" -> BLUE;
                default -> null;
            };
            if (color == null) {
                continue;
            }
            int x = (int) Math.round(width * Math.min(1, e.secondsIntoRun() / end));
            s.append(String.format(
                    Locale.ROOT,
                    "<line x1=\"%d\" y1=\"32\" x2=\"%d\" y2=\"60\" stroke=\"%s\" stroke-width=\"2\"><title>%s</title></line>",
                    x,
                    x,
                    color,
                    HtmlReport.esc(e.kind() + ": " + e.detail())));
        }
        return s.append("<text x=\"0\" y=\"80\" font-size=\"11\" font-family=\"sans-serif\">red kill -9, orange")
                .append(" database sessions ended, grey restart or exit, blue stream end and drain</text></svg>\n")
                .toString();
    }

    private static String color(long bad) {
        return bad == 0 ? GREEN : RED;
    }

    private static String count(double v) {
        return String.format(Locale.ROOT, "%,.0f", v);
    }

    private static void row(StringBuilder h, String label, long value) {
        h.append("<tr><td>")
                .append(HtmlReport.esc(label))
                .append("</td><td class=\"n\">")
                .append(TerminalTable.num(value))
                .append("</td></tr>");
    }

    private static void entries(StringBuilder h, List<LabResult.Entry> entries) {
        for (LabResult.Entry e : entries) {
            h.append("<tr><td>")
                    .append(HtmlReport.esc(e.label()))
                    .append("</td><td>")
                    .append(HtmlReport.esc(e.value()))
                    .append("</td></tr>");
        }
    }
}
