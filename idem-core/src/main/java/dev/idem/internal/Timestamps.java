package dev.idem.internal;

import java.time.Instant;
import java.time.LocalDate;

/**
 * {@link Instant#toString()} for the instants outcomes name on every duplicate ("already processed at …"), without
 * {@code DateTimeFormatter}, whose general parser-printer cost a twentieth of a JDBC inbox's own CPU per message.
 */
public final class Timestamps {
    /** 10000-01-01T00:00:00Z: the years printed with four digits. */
    private static final long END_OF_FOUR_DIGIT_YEARS = 253_402_300_800_000L;

    private Timestamps() {}

    /** The same text as {@code Instant.ofEpochMilli(epochMilli).toString()}. */
    public static String iso(long epochMilli) {
        if (epochMilli < 0 || epochMilli >= END_OF_FOUR_DIGIT_YEARS) {
            return Instant.ofEpochMilli(epochMilli).toString();
        }
        long seconds = epochMilli / 1000;
        int millis = (int) (epochMilli % 1000);
        LocalDate date = LocalDate.ofEpochDay(seconds / 86_400);
        int secondOfDay = (int) (seconds % 86_400);
        StringBuilder b = new StringBuilder(24);
        b.append(date.getYear()).append('-');
        two(b, date.getMonthValue()).append('-');
        two(b, date.getDayOfMonth()).append('T');
        two(b, secondOfDay / 3600).append(':');
        two(b, secondOfDay / 60 % 60).append(':');
        two(b, secondOfDay % 60);
        if (millis != 0) {
            b.append('.')
                    .append((char) ('0' + millis / 100))
                    .append((char) ('0' + millis / 10 % 10))
                    .append((char) ('0' + millis % 10));
        }
        return b.append('Z').toString();
    }

    /** The same text as {@code instant.toString()}, for any instant a store answers. */
    public static String iso(Instant instant) {
        long seconds = instant.getEpochSecond();
        int nanos = instant.getNano();
        boolean inMillis = nanos % 1_000_000 == 0 && seconds >= 0 && seconds < END_OF_FOUR_DIGIT_YEARS / 1000;
        return inMillis ? iso(seconds * 1000 + nanos / 1_000_000) : instant.toString();
    }

    private static StringBuilder two(StringBuilder b, int value) {
        return b.append((char) ('0' + value / 10)).append((char) ('0' + value % 10));
    }
}
