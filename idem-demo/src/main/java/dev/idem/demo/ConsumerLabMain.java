package dev.idem.demo;

import java.io.PrintStream;
import java.nio.file.Path;

/**
 * The consumer lab's command line: {@code java -jar idem-demo.jar --consumer-cmd '<command>' [options]}. Exit
 * status 0 every payment applied exactly once, 1 the verdict failed (or the run did), 2 bad options or an
 * unreachable server, 3 the consumers never drained the stream.
 */
final class ConsumerLabMain {
    private ConsumerLabMain() {}

    static int run(String[] args, PrintStream out, PrintStream err) {
        ConsumerLabOptions options;
        try {
            options = ConsumerLabOptions.parse(args, Path.of("").toAbsolutePath());
        } catch (LabOptions.HelpRequested e) {
            out.print(ConsumerLabOptions.USAGE);
            return 0;
        } catch (LabOptions.BadOptionException e) {
            err.println("idem-lab: " + e.getMessage());
            return 2;
        }
        if (!Main.prepareOutput(options.out(), err)) {
            return 2;
        }
        ConsumerLabResult result;
        try {
            result = new ConsumerLab(options, out).run();
        } catch (LabOptions.BadOptionException e) {
            err.println("idem-lab: " + e.getMessage());
            return 2;
        } catch (Exception e) {
            return Main.runFailed(e, options.out(), err, "consumer lab run failed");
        }
        out.print(ConsumerTerminalReport.render(result));
        if (!Main.writeReports(
                options.out(), ConsumerHtmlReport.render(result), ConsumerJsonReport.render(result), out, err)) {
            return 1;
        }
        out.println("  consumer output: " + options.out().toAbsolutePath().resolve("consumer-<i>.log"));
        return result.exitStatus();
    }
}
