package dev.idem.testsupport;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every Java block of README.md, README.zh-CN.md and docs/ is a region of a test source, so it compiles and runs;
 * every SQL block that defines an Idem table is part of the DDL file the JDBC store ships.
 */
class DocsCodeBlocksTest {
    private static final Pattern REGION_BEGIN = Pattern.compile("^\\s*// readme:(\\S+) begin\\s*$", Pattern.MULTILINE);
    private static final Path DDL = Path.of("stores/idem-jdbc/src/main/resources/dev/idem/jdbc/ddl");

    @Test
    void everyJavaBlock_isARegionOfATestSource() {
        List<String> regions = regionsOfAllTestSources();
        for (Path page : ReadmeSnippets.pages()) {
            for (String block : blocks(page, "java")) {
                assertThat(withoutRegions(block, regions))
                        .as(
                                "the Java block of %s starting with%n%s%nmust be made of '// readme:<name> begin/end'"
                                        + " regions of test sources (and those tests must call ReadmeSnippets.assertShown)",
                                page, firstLines(block))
                        .isBlank();
            }
        }
    }

    /** What is left of {@code block} once every region it shows is taken out (longest first). */
    private static String withoutRegions(String block, List<String> regions) {
        String rest = block;
        for (String region : regions.stream()
                .filter(r -> !r.isBlank())
                .sorted((a, b) -> b.length() - a.length())
                .toList()) {
            rest = rest.replace(region, "");
        }
        return rest;
    }

    @Test
    void everySqlBlockDefiningAnIdemTable_isPartOfTheShippedDdl() throws IOException {
        Path root = ReadmeSnippets.projectRoot();
        List<String> ddl = new ArrayList<>();
        try (Stream<Path> files = Files.list(root.resolve(DDL))) {
            files.sorted().forEach(f -> ddl.add(ReadmeSnippets.read(f)));
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

    private static List<String> regionsOfAllTestSources() {
        List<String> regions = new ArrayList<>();
        try (Stream<Path> files = Files.walk(ReadmeSnippets.projectRoot())) {
            files.filter(f -> f.toString().endsWith(".java") && f.toString().contains("/src/test/java/"))
                    .filter(f -> !f.toString().contains("/target/"))
                    .forEach(f -> {
                        String text = ReadmeSnippets.read(f);
                        Matcher m = REGION_BEGIN.matcher(text);
                        while (m.find()) {
                            regions.add(String.join("\n", ReadmeSnippets.region(text, m.group(1))));
                        }
                    });
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return regions;
    }

    private static String firstLines(String block) {
        return block.lines().limit(3).reduce((a, b) -> a + "\n" + b).orElse("");
    }
}
