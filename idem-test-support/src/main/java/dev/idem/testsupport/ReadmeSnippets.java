package dev.idem.testsupport;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * Keeps the examples of README.md, README.zh-CN.md and docs/ compiling: an example lives in a test source between
 * {@code // readme:<name> begin} and {@code // readme:<name> end}, where it compiles and runs, and {@link
 * #assertShown} checks that one of those pages shows exactly those lines (indentation removed). {@code
 * DocsCodeBlocksTest} checks the other way round: every Java block of every page is such a region.
 */
public final class ReadmeSnippets {
    private ReadmeSnippets() {}

    /** Asserts that README.md or a page of docs/ holds region {@code name} of the test source {@code source}. */
    public static void assertShown(Path source, String name) {
        String snippet = String.join("\n", region(read(source), name));
        assertThat(pages().stream().map(ReadmeSnippets::read))
                .as(
                        "README.md or a page in docs/ must show region '%s' of %s exactly; copy it from there",
                        name, source)
                .anyMatch(page -> page.contains(snippet));
    }

    /** README.md, README.zh-CN.md and every Markdown page under docs/. */
    public static List<Path> pages() {
        Path root = projectRoot();
        List<Path> pages = new ArrayList<>();
        pages.add(root.resolve("README.md"));
        Path chinese = root.resolve("README.zh-CN.md");
        if (Files.exists(chinese)) {
            pages.add(chinese);
        }
        try (Stream<Path> docs = Files.walk(root.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md") && !p.toString().contains("/target/"))
                    .sorted()
                    .forEach(pages::add);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return pages;
    }

    /** The lines of region {@code name}, with their common indentation removed. */
    static List<String> region(String text, String name) {
        List<String> lines = new ArrayList<>();
        boolean inside = false;
        for (String line : text.split("\n", -1)) {
            String trimmed = line.trim();
            if (trimmed.equals("// readme:" + name + " begin")) {
                inside = true;
            } else if (trimmed.equals("// readme:" + name + " end")) {
                return dedent(lines);
            } else if (inside) {
                lines.add(line);
            }
        }
        throw new IllegalArgumentException("no region '" + name + "' (// readme:" + name + " begin ... end)");
    }

    private static List<String> dedent(List<String> lines) {
        int indent = lines.stream()
                .filter(l -> !l.isBlank())
                .mapToInt(l -> l.length() - l.stripLeading().length())
                .min()
                .orElse(0);
        return lines.stream().map(l -> l.isBlank() ? "" : l.substring(indent)).toList();
    }

    /** The project's root directory (holding README.md and idem-core), found from the working directory upwards. */
    public static Path projectRoot() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            if (Files.exists(dir.resolve("README.md")) && Files.exists(dir.resolve("idem-core"))) {
                return dir;
            }
        }
        throw new IllegalStateException(
                "README.md of the project not found above " + Path.of("").toAbsolutePath());
    }

    static String read(Path path) {
        try {
            return Files.readString(path);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
