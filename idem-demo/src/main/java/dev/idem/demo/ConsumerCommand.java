package dev.idem.demo;

import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The user's consumer command with its placeholders ({@code {bootstrap}}, {@code {topic}}, {@code {group}}, {@code
 * {jdbcUrl}}, ...): each is replaced by its value quoted for {@code sh}, so a URL with {@code &} or {@code ?} stays
 * one word. An unknown placeholder is a bad option naming the known ones.
 */
final class ConsumerCommand {
    private static final Pattern PLACEHOLDER = Pattern.compile("\\{([A-Za-z]+)}");

    private final String template;

    ConsumerCommand(String template) {
        if (template.isBlank()) {
            throw new LabOptions.BadOptionException(
                    "--consumer-cmd is empty: give the command that starts one consumer process");
        }
        this.template = template;
    }

    String template() {
        return template;
    }

    /** The command for {@code sh -c}, every placeholder replaced. */
    String expand(Map<String, String> values) {
        Matcher m = PLACEHOLDER.matcher(template);
        StringBuilder sb = new StringBuilder();
        while (m.find()) {
            String value = values.get(m.group(1));
            if (value == null) {
                throw new LabOptions.BadOptionException(
                        "--consumer-cmd uses the unknown placeholder {" + m.group(1) + "}: the known ones are {"
                                + String.join("}, {", new java.util.TreeSet<>(values.keySet())) + "}");
            }
            m.appendReplacement(sb, Matcher.quoteReplacement(shellQuoted(value)));
        }
        m.appendTail(sb);
        return sb.toString();
    }

    static String shellQuoted(String value) {
        return value.matches("[A-Za-z0-9_./:=@%+,-]+") ? value : "'" + value.replace("'", "'\\''") + "'";
    }
}
