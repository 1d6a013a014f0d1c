package dev.idem.demo;

import java.io.PrintStream;
import java.util.Locale;

/**
 * A progress bar on the terminal ({@code \r}-redrawn), or a line per tenth when the output is not a terminal.
 */
final class Progress {
    private static final int WIDTH = 30;
    private final PrintStream out;
    private final boolean enabled;
    private final boolean interactive;
    private String label = "";
    private long total = 1;
    private int lastTenth = -1;

    Progress(PrintStream out, boolean enabled) {
        this.out = out;
        this.enabled = enabled;
        this.interactive = System.console() != null;
    }

    synchronized void start(String label, long total) {
        this.label = label;
        this.total = Math.max(1, total);
        this.lastTenth = -1;
        update(0);
    }

    synchronized void update(long done) {
        if (!enabled) {
            return;
        }
        long d = Math.min(done, total);
        int filled = (int) (WIDTH * d / total);
        int percent = (int) (100 * d / total);
        if (interactive) {
            out.printf(
                    Locale.ROOT,
                    "\r  %-24s [%s%s] %3d%% %,d/%,d ",
                    label,
                    "#".repeat(filled),
                    ".".repeat(WIDTH - filled),
                    percent,
                    d,
                    total);
            out.flush();
        } else if (percent / 10 > lastTenth) {
            lastTenth = percent / 10;
            out.printf(Locale.ROOT, "  %-24s %3d%% %,d/%,d%n", label, percent, d, total);
        }
    }

    synchronized void finish() {
        if (enabled && interactive) {
            update(total);
            out.println();
        }
    }
}
