package dev.idem.rocketmq;

import dev.idem.ConfigurationException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The broker's {@code messageDelayLevel} table, which turns a wanted retry delay into the delay level RocketMQ
 * understands. The broker owns the table; tell the listener the same one ({@link
 * IdempotentRocketMQ.Builder#delayLevels}). Immutable and thread-safe.
 */
public final class DelayLevels {
    /** RocketMQ's default {@code messageDelayLevel}: 18 levels from 1 s to 2 h. */
    public static final String ROCKETMQ_DEFAULT = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h";

    private final List<Duration> delays;

    private DelayLevels(List<Duration> delays) {
        this.delays = List.copyOf(delays);
    }

    /** RocketMQ's default table, {@value #ROCKETMQ_DEFAULT}. */
    public static DelayLevels rocketmqDefault() {
        return parse(ROCKETMQ_DEFAULT);
    }

    /** Parses a table in the broker's syntax: durations like {@code 1s}, {@code 5m}, {@code 2h}, {@code 1d}. */
    public static DelayLevels parse(String table) {
        if (table == null || table.isBlank()) {
            throw new ConfigurationException(
                    "a delay level table must not be blank; RocketMQ's default is \"" + ROCKETMQ_DEFAULT + "\"");
        }
        List<Duration> delays = new ArrayList<>();
        Duration previous = Duration.ZERO;
        for (String level : table.trim().split("\\s+")) {
            Duration delay = parseLevel(level, table);
            if (delay.compareTo(previous) < 0) {
                throw new ConfigurationException(
                        "delay levels must not decrease, but " + level + " follows a longer one in \"" + table + "\"");
            }
            delays.add(delay);
            previous = delay;
        }
        return new DelayLevels(delays);
    }

    private static Duration parseLevel(String level, String table) {
        String unit = level.substring(level.length() - 1).toLowerCase(Locale.ROOT);
        long amount;
        try {
            amount = Long.parseLong(level.substring(0, level.length() - 1));
        } catch (NumberFormatException e) {
            amount = -1;
        }
        if (amount <= 0) {
            throw new ConfigurationException("delay level '" + level + "' in \"" + table
                    + "\" is not a positive number followed by s, m, h or d");
        }
        return switch (unit) {
            case "s" -> Duration.ofSeconds(amount);
            case "m" -> Duration.ofMinutes(amount);
            case "h" -> Duration.ofHours(amount);
            case "d" -> Duration.ofDays(amount);
            default ->
                throw new ConfigurationException(
                        "delay level '" + level + "' in \"" + table + "\" has no unit s, m, h or d");
        };
    }

    /** The first level (1-based) whose delay is at least {@code delay}; the last level for longer delays. */
    public int levelFor(Duration delay) {
        for (int i = 0; i < delays.size(); i++) {
            if (delays.get(i).compareTo(delay) >= 0) {
                return i + 1;
            }
        }
        return delays.size();
    }

    /** The delay of {@code level} (1-based). */
    public Duration delayOf(int level) {
        if (level < 1 || level > delays.size()) {
            throw new IllegalArgumentException("level " + level + " is not in 1.." + delays.size());
        }
        return delays.get(level - 1);
    }

    public int size() {
        return delays.size();
    }

    @Override
    public String toString() {
        return delays.toString();
    }
}
