package dev.idem.testsupport;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every Java block of README.md, README.zh-CN.md and docs/ is complete or points to the file it comes from: either
 * regions of test sources (so it compiles and runs) shown with the imports it uses, or, after a first line {@code //
 * <path>}, consecutive lines of that compiled file (an example's source); every SQL block that defines an Idem table
 * is part of a DDL file the JDBC store or the outbox ships.
 */
class DocsCodeBlocksTest {
    private static final Pattern REGION_BEGIN = Pattern.compile("^\\s*// readme:(\\S+) begin\\s*$", Pattern.MULTILINE);
    private static final List<Path> DDL = List.of(
            Path.of("stores/idem-jdbc/src/main/resources/dev/idem/jdbc/ddl"),
            Path.of("idem-outbox/src/main/resources/dev/idem/outbox/ddl"));
    private static final Pattern IMPORT = Pattern.compile("^\\s*import (static )?[\\w.]+;\\s*$");
    private static final Pattern QUALIFIED = Pattern.compile("\\b[a-z_]\\w*(\\.[a-z_]\\w*)*\\.[A-Z]\\w*");
    private static final Pattern PACKAGE = Pattern.compile("(?m)^package ([\\w.]+);");
    /** {@code // examples/x/src/main/java/.../File.java}: the block is an excerpt of that compiled file. */
    private static final Pattern EXCERPT_HEADER = Pattern.compile("// ([\\w./-]+\\.java)\\n");

    private static final Map<String, Set<String>> MAIN_TYPES = mainTypes();

    @Test
    void everyJavaBlock_isARegionOfATestSource_orAnExcerptOfTheFileItNames() {
        List<Region> regions = regionsOfAllTestSources();
        for (Path page : ReadmeSnippets.pages()) {
            for (String block : blocks(page, "java")) {
                if (EXCERPT_HEADER.matcher(block).lookingAt()) {
                    assertExcerpt(page, block);
                    continue;
                }
                List<Region> shown = regions.stream()
                        .filter(r -> !r.text().isBlank() && block.contains(r.text()))
                        .toList();
                assertThat(withoutImports(withoutRegions(block, shown)))
                        .as(
                                "the Java block of %s starting with%n%s%nmust be made of '// readme:<name> begin/end'"
                                        + " regions of test sources (and those tests must call ReadmeSnippets.assertShown),"
                                        + " with their imports, or start with '// <path of the compiled file it comes from>'",
                                page, firstLines(block))
                        .isBlank();
                assertImportsComplete(page, block, shown);
            }
        }
    }

    /**
     * A block made of regions carries the imports its code needs: each import of a region's source file whose type
     * (or static member) the block uses, and each class of the source's own package that it names. Its import lines
     * are ones the source compiles with, so a reader can copy the block into a file as it is.
     */
    private static void assertImportsComplete(Path page, String block, List<Region> shown) {
        Set<String> imports = new TreeSet<>();
        String body = block.lines()
                .filter(l -> {
                    boolean importLine = IMPORT.matcher(l).matches();
                    if (importLine) {
                        imports.add(l.trim());
                    }
                    return !importLine && !l.trim().startsWith("package ");
                })
                .reduce("", (a, b) -> a + "\n" + b);
        Set<String> words = new HashSet<>();
        // a name written in full (java.sql.Connection) needs no import
        Matcher word = Pattern.compile("\\b[A-Za-z_][A-Za-z0-9_]*\\b")
                .matcher(QUALIFIED.matcher(body).replaceAll(""));
        while (word.find()) {
            words.add(word.group());
        }
        Set<String> needed = new TreeSet<>();
        Set<String> known = new HashSet<>();
        for (Region region : shown) {
            for (String line : region.imports()) {
                known.add(line);
                String name = line.substring(line.lastIndexOf('.') + 1, line.length() - 1);
                if (words.contains(name)) {
                    needed.add(line);
                }
            }
            for (String type : MAIN_TYPES.getOrDefault(region.packageName(), Set.of())) {
                String line = "import " + region.packageName() + "." + type + ";";
                known.add(line);
                if (words.contains(type)) {
                    needed.add(line);
                }
            }
        }
        Set<String> missing = new TreeSet<>(needed);
        missing.removeAll(imports);
        Set<String> unknown = new TreeSet<>(imports);
        unknown.removeAll(known);
        assertThat(missing)
                .as(
                        "the Java block of %s starting with%n%s%nmust show the imports its code uses",
                        page, firstLines(block))
                .isEmpty();
        assertThat(unknown)
                .as(
                        "the Java block of %s starting with%n%s%nimports what its source file does not compile with",
                        page, firstLines(block))
                .isEmpty();
    }

    /** A block that starts with {@code // <path>} shows consecutive lines of that compiled file of the repository. */
    private static void assertExcerpt(Path page, String block) {
        Matcher header = EXCERPT_HEADER.matcher(block);
        assertThat(header.lookingAt()).isTrue();
        Path file = ReadmeSnippets.projectRoot().resolve(header.group(1));
        assertThat(file)
                .as("the Java block of %s names %s, which must be a Java source of the repository", page, file)
                .exists();
        List<String> excerpt =
                block.substring(header.end()).lines().map(String::strip).toList();
        List<String> source =
                ReadmeSnippets.read(file).lines().map(String::strip).toList();
        assertThat(java.util.Collections.indexOfSubList(source, excerpt))
                .as(
                        "the Java block of %s starting with%n%s%nmust show consecutive lines of %s exactly",
                        page, firstLines(block), file)
                .isNotNegative();
    }

    /** What is left of {@code block} once every region it shows is taken out (longest first). */
    private static String withoutRegions(String block, List<Region> regions) {
        String rest = block;
        for (String region : regions.stream()
                .map(Region::text)
                .sorted((a, b) -> b.length() - a.length())
                .toList()) {
            rest = rest.replace(region, "");
        }
        return rest;
    }

    private static String withoutImports(String text) {
        return text.lines()
                .filter(l -> !IMPORT.matcher(l).matches() && !l.trim().matches("package [\\w.]+;"))
                .reduce("", (a, b) -> a + "\n" + b);
    }

    @Test
    void everySqlBlockDefiningAnIdemTable_isPartOfTheShippedDdl() throws IOException {
        Path root = ReadmeSnippets.projectRoot();
        List<String> ddl = new ArrayList<>();
        for (Path dir : DDL) {
            try (Stream<Path> files = Files.list(root.resolve(dir))) {
                files.sorted().forEach(f -> ddl.add(ReadmeSnippets.read(f)));
            }
        }
        for (Path page : ReadmeSnippets.pages()) {
            for (String block : blocks(page, "sql")) {
                if (block.matches("(?s).*CREATE\\s+(TABLE|INDEX|SEQUENCE)[^;]*\\bidem_.*")) {
                    assertThat(ddl)
                            .as(
                                    "the SQL block of %s starting with%n%s%nmust be copied verbatim from a file in %s",
                                    page, firstLines(block), DDL)
                            .anyMatch(file -> file.contains(block));
                }
            }
        }
    }

    private static List<String> blocks(Path page, String language) {
        List<String> blocks = new ArrayList<>();
        Matcher m = Pattern.compile("(?m)^( *)```" + language + "\\n(.*?)\\n\\1```$", Pattern.DOTALL)
                .matcher(ReadmeSnippets.read(page));
        while (m.find()) {
            String indent = m.group(1);
            blocks.add(m.group(2)
                    .lines()
                    .map(l -> l.startsWith(indent) ? l.substring(indent.length()) : l)
                    .reduce((a, b) -> a + "\n" + b)
                    .orElse(""));
        }
        return blocks;
    }

    /** A region of a test source, with the imports and the package of its file. */
    private record Region(String text, List<String> imports, String packageName) {}

    private static List<Region> regionsOfAllTestSources() {
        List<Region> regions = new ArrayList<>();
        for (Path f : javaSources("/src/test/java/")) {
            String text = ReadmeSnippets.read(f);
            List<String> imports = text.lines()
                    .filter(l -> IMPORT.matcher(l).matches())
                    .map(String::trim)
                    .toList();
            Matcher pkg = PACKAGE.matcher(text);
            String packageName = pkg.find() ? pkg.group(1) : "";
            Matcher m = REGION_BEGIN.matcher(text);
            while (m.find()) {
                regions.add(
                        new Region(String.join("\n", ReadmeSnippets.region(text, m.group(1))), imports, packageName));
            }
        }
        return regions;
    }

    /** The simple names of the top-level types of every main source, by package. */
    private static Map<String, Set<String>> mainTypes() {
        Map<String, Set<String>> types = new HashMap<>();
        for (Path f : javaSources("/src/main/java/")) {
            Matcher pkg = PACKAGE.matcher(ReadmeSnippets.read(f));
            String name = f.getFileName().toString().replace(".java", "");
            if (pkg.find() && !name.equals("package-info") && !name.equals("module-info")) {
                types.computeIfAbsent(pkg.group(1), k -> new HashSet<>()).add(name);
            }
        }
        return types;
    }

    private static List<Path> javaSources(String under) {
        try (Stream<Path> files = Files.walk(ReadmeSnippets.projectRoot())) {
            return files.filter(
                            f -> f.toString().endsWith(".java") && f.toString().contains(under))
                    .filter(f -> !f.toString().contains("/target/"))
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String firstLines(String block) {
        return block.lines().limit(3).reduce((a, b) -> a + "\n" + b).orElse("");
    }
}
