package dev.idem.demo;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The double-charge lab's command line: {@code java -jar idem-demo/target/idem-demo.jar [options]} ({@code --help}
 * lists them). Exit status 0 when every guard held, 1 when not (or the run did not finish), 2 for bad options.
 * With {@code --consumer-cmd} it runs the consumer lab instead ({@link ConsumerLabMain}), with {@code --flow
 * two-stage} the outbox's two-stage flow ({@link TwoStageLab}).
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /** Runs the lab; returns the exit status. */
    static int run(String[] args, PrintStream out, PrintStream err) {
        if (TwoStageOptions.wanted(args)) {
            return TwoStageLab.run(args, out, err);
        }
        if (ConsumerLabOptions.wanted(args)) {
            return ConsumerLabMain.run(args, out, err);
        }
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
        if (!prepareOutput(options.out(), err)) {
            return 2;
        }
        LabResult result;
        try {
            result = new Lab(options, out, err).run();
        } catch (LabOptions.BadOptionException e) {
            err.println("idem-lab: " + e.getMessage());
            return 2;
        } catch (Exception e) {
            return runFailed(e, options.out(), err, "lab run failed");
        }
        out.print(TerminalTable.render(result));
        if (!writeReports(options.out(), HtmlReport.render(result), JsonReport.render(result), out, err)) {
            return 1;
        }
        return result.guardsHeld() ? 0 : 1;
    }

    /** Creates the output directory and sends the log there; false, after saying why, when it cannot be created. */
    static boolean prepareOutput(Path dir, PrintStream err) {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            err.println("idem-lab: cannot create the output directory " + dir + " (" + e.getMessage()
                    + "): pass a writable --out DIR");
            return false;
        }
        configureLogging(dir);
        return true;
    }

    /** Says that the run failed and proves nothing, logs the details; returns the exit status 1. */
    static int runFailed(Exception e, Path dir, PrintStream err, String what) {
        err.println("idem-lab: the run failed and proves nothing: " + LabDatabase.rootMessage(e) + " (details in "
                + dir.resolve("idem-lab.log") + ")");
        org.slf4j.LoggerFactory.getLogger(Main.class).error(what, e);
        return 1;
    }

    /** Writes the HTML and JSON reports into {@code dir} and names them; false, after saying why, when it cannot. */
    static boolean writeReports(Path dir, String html, String json, PrintStream out, PrintStream err) {
        try {
            Path htmlFile = dir.resolve("idem-lab-report.html");
            Path jsonFile = dir.resolve("idem-lab-report.json");
            Files.writeString(htmlFile, html, StandardCharsets.UTF_8);
            Files.writeString(jsonFile, json, StandardCharsets.UTF_8);
            out.println("  report: " + htmlFile.toAbsolutePath() + "\n          " + jsonFile.toAbsolutePath());
            return true;
        } catch (IOException e) {
            err.println("idem-lab: cannot write the report to " + dir + ": " + e.getMessage());
            return false;
        }
    }

    /** Kafka and the pools log through SLF4J: warnings and errors go to a file in the output directory. */
    static void configureLogging(Path out) {
        System.setProperty(
                "org.slf4j.simpleLogger.logFile", out.resolve("idem-lab.log").toString());
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        System.setProperty("org.slf4j.simpleLogger.showDateTime", "true");
    }
}
