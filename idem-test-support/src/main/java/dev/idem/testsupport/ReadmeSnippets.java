package dev.idem.testsupport;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Keeps README examples compiling: an example lives in a test source between {@code // readme:<name> begin} and
 * {@code // readme:<name> end}, where it compiles and runs, and {@link #assertShown} checks that the README shows
 * exactly those lines (indentation removed).
 */
public final class ReadmeSnippets {
    private ReadmeSnippets() {}

    /** Asserts that the project README holds region {@code name} of the test source {@code source}. */
    public static void assertShown(Path source, String name) {
        String snippet = String.join("\n", region(read(source), name));
        assertThat(read(readme()))
                .as("README.md must show region '%s' of %s exactly; copy it from there", name, source)
                .contains(snippet);
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

    /** The project's README.md, found from the working directory upwards. */
    static Path readme() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve("README.md");
            if (Files.exists(candidate) && Files.exists(dir.resolve("idem-core"))) {
                return candidate;
            }
        }
        throw new IllegalStateException(
                "README.md of the project not found above " + Path.of("").toAbsolutePath());
    }

    private static String read(Path path) {
        try {
            return Files.readString(path);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
