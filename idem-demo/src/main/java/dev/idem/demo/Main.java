package dev.idem.demo;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The double-charge lab's command line: {@code java -jar idem-demo/target/idem-demo.jar [options]} ({@code --help}
 * lists them). Exit status 0 when every guard held, 1 when not (or the run did not finish), 2 for bad options.
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /** Runs the lab; returns the exit status. */
    static int run(String[] args, PrintStream out, PrintStream err) {
        LabOptions options;
        try {
            options = LabOptions.parse(args, Path.of("").toAbsolutePath());
        } catch (LabOptions.HelpRequested e) {
            out.print(LabOptions.USAGE);
            return 0;
        } catch (LabOptions.BadOptionException e) {
            err.println("idem-lab: " + e.getMessage());
            return 2;
        }
        try {
            Files.createDirectories(options.out());
        } catch (IOException e) {
            err.println("idem-lab: cannot create the output directory " + options.out() + " (" + e.getMessage()
                    + "): pass a writable --out DIR");
            return 2;
        }
        configureLogging(options.out());
        LabResult result;
        try {
            result = new Lab(options, out, err).run();
        } catch (LabOptions.BadOptionException e) {
            err.println("idem-lab: " + e.getMessage());
            return 2;
        } catch (Exception e) {
            err.println("idem-lab: the run failed and proves nothing: " + LabDatabase.rootMessage(e) + " (details in "
                    + options.out().resolve("idem-lab.log") + ")");
            org.slf4j.LoggerFactory.getLogger(Main.class).error("lab run failed", e);
            return 1;
        }
        out.print(TerminalTable.render(result));
        try {
            Path html = options.out().resolve("idem-lab-report.html");
            Path json = options.out().resolve("idem-lab-report.json");
            Files.writeString(html, HtmlReport.render(result), StandardCharsets.UTF_8);
            Files.writeString(json, JsonReport.render(result), StandardCharsets.UTF_8);
            out.println("  report: " + html.toAbsolutePath() + "\n          " + json.toAbsolutePath());
        } catch (IOException e) {
            err.println("idem-lab: cannot write the report to " + options.out() + ": " + e.getMessage());
            return 1;
        }
        return result.guardsHeld() ? 0 : 1;
    }

    /** Kafka and the pools log through SLF4J: warnings and errors go to a file in the output directory. */
    private static void configureLogging(Path out) {
        System.setProperty(
                "org.slf4j.simpleLogger.logFile", out.resolve("idem-lab.log").toString());
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        System.setProperty("org.slf4j.simpleLogger.showDateTime", "true");
    }
}
