package dev.idem.demo;

import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** What a two-stage run found: the verdict's counts by SQL on both stages' effects and on every event, rendered. */
record TwoStageVerdict(
        int orders,
        Map<String, Long> counts,
        long eventsInTopic,
        long kills,
        long crashes,
        boolean drained,
        double sendSeconds,
        double drainSeconds,
        double totalSeconds,
        boolean stageTwoGuarded,
        List<FaultLog.Event> faults) {

    /** The verdict's counts, each one SQL query (printed in docs/lab.md). */
    static Map<String, Long> counts(LabDatabase db, String tag, String eventsTopic) throws SQLException {
        String mine = " LIKE '" + tag + "-%'";
        String events = "'" + eventsTopic + "'";
        Map<String, Long> c = new LinkedHashMap<>();
        c.put(
                "orders paid twice",
                db.queryLong("SELECT COUNT(*) FROM (SELECT order_id FROM two_stage_payments" + " WHERE order_id" + mine
                        + " GROUP BY order_id HAVING COUNT(*) > 1) d"));
        c.put(
                "orders never paid",
                db.queryLong("SELECT COUNT(*) FROM two_stage_orders o WHERE o.run = '" + tag
                        + "' AND NOT EXISTS (SELECT 1 FROM two_stage_payments p WHERE p.order_id = o.order_id)"));
        c.put(
                "events written beyond one per payment",
                db.queryLong(
                        "SELECT COUNT(*) - (SELECT COUNT(DISTINCT order_id)" + " FROM two_stage_payments WHERE order_id"
                                + mine + ") FROM idem_outbox WHERE destination = " + events));
        c.put(
                "events unsent",
                db.queryLong(
                        "SELECT COUNT(*) FROM idem_outbox WHERE destination = " + events + " AND sent_at IS NULL"));
        c.put(
                "events parked",
                db.queryLong("SELECT COUNT(*) FROM idem_outbox WHERE destination = " + events
                        + " AND parked_at IS NOT NULL"));
        c.put(
                "events applied twice",
                db.queryLong("SELECT COUNT(*) FROM (SELECT event_id FROM two_stage_shipments" + " WHERE order_id" + mine
                        + " GROUP BY event_id HAVING COUNT(*) > 1) d"));
        c.put(
                "events never applied",
                db.queryLong("SELECT COUNT(*) FROM idem_outbox x WHERE destination = " + events
                        + " AND NOT EXISTS (SELECT 1 FROM two_stage_shipments s WHERE s.event_id = x.message_id)"));
        c.put(
                "orders shipped twice",
                db.queryLong("SELECT COUNT(*) FROM (SELECT order_id FROM two_stage_shipments" + " WHERE order_id" + mine
                        + " GROUP BY order_id HAVING COUNT(*) > 1) d"));
        c.put(
                "paid orders never shipped",
                db.queryLong("SELECT COUNT(*) FROM two_stage_payments p WHERE p.order_id" + mine
                        + " AND NOT EXISTS (SELECT 1 FROM two_stage_shipments s WHERE s.order_id = p.order_id)"));
        c.put(
                "shipments out of their customer's order",
                db.queryLong("SELECT COUNT(*) FROM two_stage_shipments WHERE order_id" + mine
                        + " AND previous_seq <> seq - 1"));
        return c;
    }

    boolean passed() {
        return drained && counts.values().stream().allMatch(n -> n == 0);
    }

    int exitStatus() {
        return !drained ? 3 : passed() ? 0 : 1;
    }

    String render() {
        StringBuilder b =
                new StringBuilder("\nTwo-stage flow: orders -> payments (inbox + outbox) -> relay -> shipping ("
                        + (stageTwoGuarded ? "inbox" : "NO inbox") + ")\n");
        b.append(String.format(
                "  %d orders (every 9th sent twice) in %.1f s; %d kill -9, %d in-process crashes (exits)%n",
                orders, sendSeconds, kills, crashes));
        b.append(String.format(
                "  %d events in the topic (above %d: republications after a relay crash)%n", eventsInTopic, orders));
        counts.forEach((k, v) -> b.append(String.format("  %-45s %8d%n", k, v)));
        if (!drained) {
            b.append(String.format(
                    "%n  NEVER DRAINED within %.0f s: the counts are what was applied so far%n", drainSeconds));
        } else {
            b.append(String.format(
                    "%n  %s (drained %.1f s after the stream, %.1f s in all)%n",
                    passed()
                            ? "PASSED: every order paid once, every event applied once, none lost, in order"
                            : "FAILED: see the counts above",
                    drainSeconds,
                    totalSeconds));
        }
        return b.toString();
    }

    String json() {
        StringBuilder b = new StringBuilder("{\n  \"flow\": \"two-stage\",\n");
        b.append("  \"orders\": ").append(orders).append(",\n");
        b.append("  \"stage_two_guard\": \"")
                .append(stageTwoGuarded ? "inbox" : "none")
                .append("\",\n");
        b.append("  \"events_in_topic\": ").append(eventsInTopic).append(",\n");
        b.append("  \"kills\": ").append(kills).append(",\n");
        b.append("  \"crashes\": ").append(crashes).append(",\n");
        b.append("  \"drained\": ").append(drained).append(",\n");
        b.append("  \"passed\": ").append(passed()).append(",\n");
        b.append(String.format(Locale.ROOT, "  \"drain_seconds\": %.1f,%n", drainSeconds));
        b.append("  \"counts\": {");
        String sep = "\n";
        for (Map.Entry<String, Long> e : counts.entrySet()) {
            b.append(sep)
                    .append("    \"")
                    .append(e.getKey().replace("'", ""))
                    .append("\": ")
                    .append(e.getValue());
            sep = ",\n";
        }
        b.append("\n  },\n  \"faults\": [");
        sep = "\n";
        for (FaultLog.Event e : faults) {
            b.append(sep)
                    .append(String.format(
                            Locale.ROOT,
                            "    {\"at\": \"%s\", \"second\": %.2f, \"kind\": \"%s\", \"detail\": \"%s\"}",
                            e.at(),
                            e.secondsIntoRun(),
                            e.kind(),
                            e.detail().replace("\\", "\\\\").replace("\"", "\\\"")));
            sep = ",\n";
        }
        return b.append("\n  ]\n}\n").toString();
    }
}
