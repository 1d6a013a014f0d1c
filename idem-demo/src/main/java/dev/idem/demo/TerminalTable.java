package dev.idem.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** The lab's result as plain-text tables. */
final class TerminalTable {
    private TerminalTable() {}

    static String render(LabResult r) {
        StringBuilder sb = new StringBuilder();
        sb.append('\n');
        for (LabResult.Entry e : r.environment()) {
            sb.append(String.format(Locale.ROOT, "  %-24s %s%n", e.label(), e.value()));
        }
        sb.append("\nInjected\n");
        for (LabResult.Entry e : r.injected()) {
            sb.append(String.format(Locale.ROOT, "  %-72s %8s%n", e.label(), e.value()));
        }
        sb.append(String.format(
                Locale.ROOT,
                "%nResults (%,d orders, %,d to be paid once; damage counted with SQL on each strategy's tables)%n",
                r.orders(),
                r.paidOrders()));
        List<String[]> rows = new ArrayList<>();
        rows.add(new String[] {
            "strategy",
            "double-charged",
            "overcharged",
            "lost pay",
            "wrong state",
            "charges",
            "dup suppressed",
            "retries",
            "dead letters",
            "msg/s",
            "verdict"
        });
        for (StrategyResult s : r.strategies()) {
            rows.add(new String[] {
                s.id(),
                num(s.doubleCharged()),
                money(s.overcharged()),
                num(s.lostPayments()),
                num(s.wrongState()),
                num(s.charges()),
                num(s.duplicatesSuppressed()),
                num(s.retries()),
                num(s.deadLetters()),
                String.format(Locale.ROOT, "%,.0f", s.throughput()),
                verdict(s)
            });
        }
        int[] width = new int[rows.get(0).length];
        for (String[] row : rows) {
            for (int i = 0; i < row.length; i++) {
                width[i] = Math.max(width[i], row[i].length());
            }
        }
        for (int k = 0; k < rows.size(); k++) {
            String[] row = rows.get(k);
            sb.append("  ");
            for (int i = 0; i < row.length; i++) {
                String cell = i == 0 || i == row.length - 1
                        ? pad(row[i], width[i])
                        : " ".repeat(width[i] - row[i].length()) + row[i];
                sb.append(cell).append(i == row.length - 1 ? "" : "  ");
            }
            sb.append('\n');
            if (k == 0) {
                int len = 0;
                for (int w : width) {
                    len += w + 2;
                }
                sb.append("  ").append("-".repeat(len - 2)).append('\n');
            }
        }
        for (StrategyResult s : r.strategies()) {
            if (!s.guarded() && s.damaged()) {
                sb.append(String.format(
                        Locale.ROOT,
                        "%n  Without a guard: %,d orders charged more than once, %s taken too much, %,d orders in the"
                                + " wrong final state.%n",
                        s.doubleCharged(),
                        money(s.overcharged()),
                        s.wrongState()));
            }
            if (!s.failure().isEmpty()) {
                sb.append("  ")
                        .append(s.id())
                        .append(" stopped: ")
                        .append(s.failure())
                        .append('\n');
            }
        }
        sb.append(String.format(Locale.ROOT, "%n  %s (%.1f s)%n", r.verdict(), r.seconds()));
        return sb.toString();
    }

    static String verdict(StrategyResult s) {
        if (!s.finished()) {
            return "INCOMPLETE";
        }
        if (!s.guarded()) {
            return s.damaged() ? "DAMAGED (expected)" : "no damage this time";
        }
        return s.correct() ? "OK" : "FAILED";
    }

    static String num(long n) {
        return String.format(Locale.ROOT, "%,d", n);
    }

    /** Amounts are cents. */
    static String money(long cents) {
        return String.format(Locale.ROOT, "$%,.2f", cents / 100.0);
    }

    private static String pad(String s, int w) {
        return s + " ".repeat(w - s.length());
    }
}
