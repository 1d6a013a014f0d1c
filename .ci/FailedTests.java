import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * Prints, as the last lines of a failed CI run, which tests failed and what they said: CI keeps only the tail of a
 * run's output, where a parallel build's last module may hide the failing one. Reads every surefire report under the
 * given directory; keeps within a fixed number of lines so that the tail holds all of it.
 */
public final class FailedTests {
  private static final int LINE_BUDGET = 100;
  private static final int WIDTH = 220;

  private record Failure(String module, String test, String time, String kind, String text, String output) {}

  public static void main(String[] args) throws Exception {
    List<Failure> failures = new ArrayList<>();
    try (Stream<Path> files = Files.walk(Path.of(args.length > 0 ? args[0] : "."))) {
      for (Path report : files.filter(FailedTests::isTestReport).sorted().toList()) {
        try {
          failures.addAll(failuresIn(report));
        } catch (Exception e) {
          System.out.println("ci: unreadable test report " + report + " (" + e + ")");
        }
      }
    }
    if (failures.isEmpty()) {
      System.out.println("ci: no test report holds a failure: the build failed elsewhere (see the Maven output above)");
      printDumps(Path.of(args.length > 0 ? args[0] : "."));
      return;
    }
    System.out.printf("ci: %d failing test(s); each with its message, its Idem frames and its output's last lines%n",
        failures.size());
    int budget = Math.max(12, (LINE_BUDGET - 1) / failures.size());
    for (Failure failure : failures.subList(0, Math.min(failures.size(), 8))) {
      print(failure, budget);
    }
  }

  /** The last lines of surefire's dump files: what a test JVM that died or hung left behind. */
  private static void printDumps(Path root) throws IOException {
    try (Stream<Path> files = Files.walk(root)) {
      List<Path> dumps = files.filter(p -> p.getFileName().toString().matches(".*\\.dump(stream)?")).sorted().toList();
      for (Path dump : dumps.subList(0, Math.min(dumps.size(), 5))) {
        List<String> lines = Files.readAllLines(dump);
        System.out.println("--- " + dump + ", last lines:");
        lines.subList(Math.max(0, lines.size() - 15), lines.size()).forEach(line -> System.out.println("  | " + cut(line)));
      }
    }
  }

  private static boolean isTestReport(Path path) {
    String name = path.getFileName().toString();
    return name.startsWith("TEST-") && name.endsWith(".xml")
        && path.getParent().getFileName().toString().matches("(surefire|failsafe)-reports");
  }

  private static List<Failure> failuresIn(Path report) throws Exception {
    String module = report.getParent().getParent().getParent().getFileName().toString();
    Element suite = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(report.toFile())
        .getDocumentElement();
    List<Failure> failures = new ArrayList<>();
    for (Node node = suite.getFirstChild(); node != null; node = node.getNextSibling()) {
      if (node instanceof Element testcase && testcase.getTagName().equals("testcase")) {
        Element problem = firstChild(testcase, "failure", "error");
        if (problem != null) {
          failures.add(new Failure(module,
              shortName(testcase.getAttribute("classname")) + "#" + testcase.getAttribute("name"),
              testcase.getAttribute("time"), problem.getAttribute("type"), problem.getTextContent(),
              output(testcase)));
        }
      }
    }
    return failures;
  }

  private static Element firstChild(Element parent, String... names) {
    for (Node node = parent.getFirstChild(); node != null; node = node.getNextSibling()) {
      if (node instanceof Element child && Arrays.asList(names).contains(child.getTagName())) {
        return child;
      }
    }
    return null;
  }

  private static String output(Element testcase) {
    StringBuilder output = new StringBuilder();
    for (String stream : List.of("system-out", "system-err")) {
      Element element = firstChild(testcase, stream);
      if (element != null) {
        output.append(element.getTextContent()).append('\n');
      }
    }
    return output.toString();
  }

  private static void print(Failure failure, int budget) {
    System.out.printf("--- %s %s (%s s) %s%n", failure.module(), failure.test(), failure.time(), failure.kind());
    List<String> lines = failure.text().lines().toList();
    List<String> message = new ArrayList<>();
    List<String> frames = new ArrayList<>();
    for (String line : lines) {
      String trimmed = line.strip();
      if (!trimmed.startsWith("at ") && !trimmed.startsWith("...")) {
        message.add(trimmed);
      } else if (trimmed.startsWith("at dev.idem.")) {
        frames.add(trimmed);
      }
    }
    int messageLines = Math.min(message.size(), budget / 3);
    int frameLines = Math.min(frames.size(), Math.max(2, budget / 6));
    message.subList(0, messageLines).forEach(line -> System.out.println("  " + cut(line)));
    frames.subList(0, frameLines).forEach(line -> System.out.println("    " + cut(line)));
    List<String> output = failure.output().lines().filter(line -> !line.isBlank()).toList();
    int outputLines = Math.min(output.size(), budget - 1 - messageLines - frameLines);
    if (outputLines > 0) {
      System.out.println("  output, last " + outputLines + " of " + output.size() + " lines:");
      output.subList(output.size() - outputLines, output.size()).forEach(line -> System.out.println("  | " + cut(line)));
    }
  }

  private static String shortName(String className) {
    return className.substring(className.lastIndexOf('.') + 1);
  }

  private static String cut(String line) {
    return line.length() <= WIDTH ? line : line.substring(0, WIDTH) + " …";
  }

  private FailedTests() {}
}
