package dev.idem.id;

import dev.idem.ConfigurationException;
import java.nio.charset.StandardCharsets;
import java.time.DateTimeException;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The two faces of a message id and how to read them back. Immutable and thread-safe; consumers parse with the
 * same format the producers generate with.
 *
 * <p><b>Long form</b> (64 bits, sign bit always 0): {@code timestampBits} of milliseconds since the {@code epoch},
 * then {@code nodeBits} of node id, then {@code sequenceBits} of per-millisecond sequence:
 *
 * <pre>{@code id = (millis - epoch) << (nodeBits + sequenceBits) | nodeId << sequenceBits | sequence}</pre>
 *
 * Defaults: 41/10/12 bits since {@value #DEFAULT_EPOCH}, i.e. 69 years (to 2093), 1,024 node ids and 4,096 ids per
 * millisecond per node. When the widths add up to less than 63, the bits above them are zero. Ids of one node
 * grow with time; ids of one millisecond are ordered by node, then sequence.
 *
 * <p><b>String form</b>: {@code PREFIX_yyyyMMddHHmmssSSS_NODEnn_SSSS}, e.g. {@code ORDER_20240115143000123_NODE01_0001}:
 *
 * <ul>
 *   <li>{@code PREFIX}: 1 to {@value #MAX_PREFIX_LENGTH} characters of {@code [A-Z0-9]} starting with a letter (the
 *       business type; no {@code _} inside);
 *   <li>the millisecond timestamp, 17 digits, as local time in the format's zone (UTC by default; only zones with a
 *       fixed offset, since local times repeat when a daylight-saving zone falls back);
 *   <li>{@code NODE} and the node id in decimal, zero-padded to at least 2 digits;
 *   <li>the sequence in decimal, zero-padded to {@link #sequenceDigits()} digits (4 by default: at least 4, more
 *       when the largest sequence needs more).
 * </ul>
 *
 * Both forms carry the same parts, so a generator's strings of one prefix sort in the order they were issued.
 * Parsing accepts only the canonical text, so a string id and its parts map one to one.
 */
public final class MessageIdFormat {
    public static final String DEFAULT_EPOCH = "2024-01-01T00:00:00Z";
    public static final int MAX_PREFIX_LENGTH = 16;

    private static final MessageIdFormat DEFAULTS = builder().build();
    private static final int TIMESTAMP_DIGITS = 17;
    private static final long MILLIS_PER_DAY = 86_400_000L;
    private static final String EXAMPLE = "ORDER_20240115143000123_NODE01_0001";

    private final Instant epoch;
    private final long epochMillis;
    private final int timestampBits;
    private final int nodeBits;
    private final int sequenceBits;
    private final ZoneId zone;
    private final long offsetMillis;
    private final int sequenceDigits;

    private MessageIdFormat(Builder b) {
        this.epoch = b.epoch;
        this.epochMillis = b.epoch.toEpochMilli();
        this.timestampBits = b.timestampBits;
        this.nodeBits = b.nodeBits;
        this.sequenceBits = b.sequenceBits;
        this.zone = b.zone;
        this.offsetMillis = b.zone.getRules().getOffset(Instant.EPOCH).getTotalSeconds() * 1000L;
        this.sequenceDigits = Math.max(4, digits(maxSequence()));
    }

    /** 41/10/12 bits since {@value #DEFAULT_EPOCH}, strings in UTC. */
    public static MessageIdFormat defaults() {
        return DEFAULTS;
    }

    public static Builder builder() {
        return new Builder();
    }

    public Instant epoch() {
        return epoch;
    }

    public int timestampBits() {
        return timestampBits;
    }

    public int nodeBits() {
        return nodeBits;
    }

    public int sequenceBits() {
        return sequenceBits;
    }

    /** The zone of the string form's timestamp (a fixed offset). */
    public ZoneId zone() {
        return zone;
    }

    public int maxNodeId() {
        return (int) ((1L << nodeBits) - 1);
    }

    /** The largest sequence of one millisecond: {@code 2^sequenceBits - 1}. */
    public int maxSequence() {
        return (int) ((1L << sequenceBits) - 1);
    }

    /** The last millisecond this format can hold. */
    public Instant lastTimestamp() {
        return Instant.ofEpochMilli(epochMillis + maxOffset());
    }

    /** How many digits the string form's sequence has (zero-padded). */
    public int sequenceDigits() {
        return sequenceDigits;
    }

    /** Checks a prefix, throwing {@link ConfigurationException} with the rule when it is not valid. */
    public static String validatePrefix(String prefix) {
        String problem = prefixProblem(prefix);
        if (problem != null) {
            throw new ConfigurationException("message id prefix '" + prefix + "' is not valid: " + problem);
        }
        return prefix;
    }

    /** The long id of these parts. */
    public long longId(Instant timestamp, int nodeId, int sequence) {
        checkParts(timestamp, nodeId, sequence);
        return compose(timestamp.toEpochMilli() - epochMillis, nodeId, sequence);
    }

    /** The string id of these parts. */
    public String stringId(String prefix, Instant timestamp, int nodeId, int sequence) {
        validatePrefix(prefix);
        checkParts(timestamp, nodeId, sequence);
        return new String(
                write(prefix, timestampDigits(timestamp.toEpochMilli()), nodePart(nodeId), sequence),
                StandardCharsets.ISO_8859_1);
    }

    /** The parts of a long id; {@link InvalidMessageIdException} if it cannot have been made by this format. */
    public ParsedLongId parse(long id) {
        if (id < 0) {
            throw new InvalidMessageIdException(
                    "message id " + id + " is negative: ids of this format always have the sign bit 0");
        }
        int used = timestampBits + nodeBits + sequenceBits;
        if (used < 63 && (id >>> used) != 0) {
            throw new InvalidMessageIdException("message id " + id + " has bits set above bit " + (used - 1)
                    + ": it was not made with this format (" + describeLayout() + ")");
        }
        long offset = id >>> (nodeBits + sequenceBits);
        int node = (int) ((id >>> sequenceBits) & maxNodeId());
        int sequence = (int) (id & maxSequence());
        return new ParsedLongId(Instant.ofEpochMilli(epochMillis + offset), node, sequence);
    }

    /** The parts of a string id; {@link InvalidMessageIdException} naming what is wrong if it does not parse. */
    public ParsedStringId parse(String id) {
        Objects.requireNonNull(id, "id");
        if (id.length() > MAX_PREFIX_LENGTH + 1 + TIMESTAMP_DIGITS + 6 + 10 + 1 + 10) {
            throw invalid(id, "it is " + id.length() + " characters long");
        }
        int end1 = id.indexOf('_');
        if (end1 < 0) {
            throw invalid(id, "it has no '_' separators");
        }
        String prefix = id.substring(0, end1);
        String prefixProblem = prefixProblem(prefix);
        if (prefixProblem != null) {
            throw invalid(id, "prefix '" + prefix + "': " + prefixProblem);
        }
        int start2 = end1 + 1;
        int end2 = start2 + TIMESTAMP_DIGITS;
        if (id.length() <= end2 || id.charAt(end2) != '_' || !allDigits(id, start2, end2)) {
            throw invalid(id, "the timestamp after the prefix must be 17 digits yyyyMMddHHmmssSSS followed by '_'");
        }
        Instant timestamp = parseTimestamp(id, start2);
        int start3 = end2 + 1;
        if (!id.startsWith("NODE", start3)) {
            throw invalid(id, "'NODE' and the node id must follow the timestamp");
        }
        int end3 = id.indexOf('_', start3);
        if (end3 < 0) {
            throw invalid(id, "there is no '_' between the node id and the sequence");
        }
        long node = number(id, start3 + 4, end3, "node id");
        long sequence = number(id, end3 + 1, id.length(), "sequence");
        if (node > maxNodeId()) {
            throw invalid(id, "node id " + node + " is above this format's largest, " + maxNodeId());
        }
        if (sequence > maxSequence()) {
            throw invalid(id, "sequence " + sequence + " is above this format's largest, " + maxSequence());
        }
        if (timestamp.toEpochMilli() < epochMillis || timestamp.toEpochMilli() - epochMillis > maxOffset()) {
            throw invalid(
                    id,
                    "timestamp " + timestamp + " is outside this format's range " + epoch + " to " + lastTimestamp());
        }
        String canonical = stringId(prefix, timestamp, (int) node, (int) sequence);
        if (!canonical.equals(id)) {
            throw invalid(
                    id,
                    "it is not in canonical form (node id zero-padded to 2 digits, sequence to " + sequenceDigits
                            + "): expected '" + canonical + "'");
        }
        return new ParsedStringId(prefix, timestamp, (int) node, (int) sequence);
    }

    @Override
    public String toString() {
        return "MessageIdFormat[" + describeLayout() + ", zone " + zone + "]";
    }

    long epochMillis() {
        return epochMillis;
    }

    long maxOffset() {
        return (1L << timestampBits) - 1;
    }

    long compose(long offset, int nodeId, int sequence) {
        return offset << (nodeBits + sequenceBits) | ((long) nodeId << sequenceBits) | sequence;
    }

    /** {@code _NODEnn_}: the constant middle part of one node's string ids. */
    byte[] nodePart(int nodeId) {
        String text = "_NODE" + (nodeId < 10 ? "0" : "") + nodeId + "_";
        return text.getBytes(StandardCharsets.ISO_8859_1);
    }

    /** The 17 timestamp digits of a millisecond, in this format's zone. */
    byte[] timestampDigits(long epochMilli) {
        long local = epochMilli + offsetMillis;
        LocalDate date = LocalDate.ofEpochDay(Math.floorDiv(local, MILLIS_PER_DAY));
        int ms = (int) Math.floorMod(local, MILLIS_PER_DAY);
        if (date.getYear() < 0 || date.getYear() > 9999) {
            throw new IllegalArgumentException("string ids hold 4-digit years; " + Instant.ofEpochMilli(epochMilli)
                    + " is outside them in zone " + zone);
        }
        byte[] out = new byte[TIMESTAMP_DIGITS];
        putDigits(out, 0, date.getYear(), 4);
        putDigits(out, 4, date.getMonthValue(), 2);
        putDigits(out, 6, date.getDayOfMonth(), 2);
        putDigits(out, 8, ms / 3_600_000, 2);
        putDigits(out, 10, ms / 60_000 % 60, 2);
        putDigits(out, 12, ms / 1000 % 60, 2);
        putDigits(out, 14, ms % 1000, 3);
        return out;
    }

    /** The bytes of a string id. {@code prefix} must be valid (checked by the caller). */
    byte[] write(String prefix, byte[] timestampDigits, byte[] nodePart, int sequence) {
        int p = prefix.length();
        byte[] out = new byte[p + 1 + TIMESTAMP_DIGITS + nodePart.length + sequenceDigits];
        for (int i = 0; i < p; i++) {
            out[i] = (byte) prefix.charAt(i);
        }
        out[p] = '_';
        System.arraycopy(timestampDigits, 0, out, p + 1, TIMESTAMP_DIGITS);
        System.arraycopy(nodePart, 0, out, p + 1 + TIMESTAMP_DIGITS, nodePart.length);
        putDigits(out, out.length - sequenceDigits, sequence, sequenceDigits);
        return out;
    }

    static @Nullable String prefixProblem(String prefix) {
        if (prefix == null || prefix.isEmpty() || prefix.length() > MAX_PREFIX_LENGTH) {
            return "use 1 to " + MAX_PREFIX_LENGTH + " characters of [A-Z0-9] starting with a letter, e.g. 'ORDER'";
        }
        char first = prefix.charAt(0);
        if (first < 'A' || first > 'Z') {
            return "it must start with an upper-case letter A-Z, e.g. 'ORDER'";
        }
        for (int i = 1; i < prefix.length(); i++) {
            char c = prefix.charAt(i);
            if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) {
                return "character '" + c + "' at index " + i + " is not one of [A-Z0-9]"
                        + (c == '_' ? " ('_' separates the parts of the id)" : "");
            }
        }
        return null;
    }

    private void checkParts(Instant timestamp, int nodeId, int sequence) {
        long millis = timestamp.toEpochMilli();
        if (timestamp.getNano() % 1_000_000 != 0) {
            throw new IllegalArgumentException("timestamp " + timestamp + " is finer than a millisecond");
        }
        if (millis < epochMillis || millis - epochMillis > maxOffset()) {
            throw new IllegalArgumentException(
                    "timestamp " + timestamp + " is outside this format's range " + epoch + " to " + lastTimestamp());
        }
        if (nodeId < 0 || nodeId > maxNodeId()) {
            throw new IllegalArgumentException("node id " + nodeId + " is outside 0 to " + maxNodeId());
        }
        if (sequence < 0 || sequence > maxSequence()) {
            throw new IllegalArgumentException("sequence " + sequence + " is outside 0 to " + maxSequence());
        }
    }

    private Instant parseTimestamp(String id, int start) {
        try {
            LocalDateTime local = LocalDateTime.of(
                    Integer.parseInt(id, start, start + 4, 10),
                    Integer.parseInt(id, start + 4, start + 6, 10),
                    Integer.parseInt(id, start + 6, start + 8, 10),
                    Integer.parseInt(id, start + 8, start + 10, 10),
                    Integer.parseInt(id, start + 10, start + 12, 10),
                    Integer.parseInt(id, start + 12, start + 14, 10),
                    Integer.parseInt(id, start + 14, start + 17, 10) * 1_000_000);
            return local.toInstant(ZoneOffset.ofTotalSeconds((int) (offsetMillis / 1000)));
        } catch (DateTimeException e) {
            throw invalid(
                    id,
                    "timestamp '" + id.substring(start, start + TIMESTAMP_DIGITS) + "' is not a real time: "
                            + e.getMessage());
        }
    }

    private static long number(String id, int start, int end, String what) {
        if (start >= end || end - start > 10 || !allDigits(id, start, end)) {
            throw invalid(id, "the " + what + " must be 1 to 10 decimal digits");
        }
        return Long.parseLong(id, start, end, 10);
    }

    private static boolean allDigits(String s, int start, int end) {
        for (int i = start; i < end; i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') {
                return false;
            }
        }
        return true;
    }

    private static InvalidMessageIdException invalid(String id, String problem) {
        String shown = id.length() > 80 ? id.substring(0, 80) + "..." : id;
        return new InvalidMessageIdException(
                "message id '" + shown + "' is not valid: " + problem + " (expected e.g. " + EXAMPLE + ")");
    }

    private static void putDigits(byte[] out, int offset, int value, int width) {
        for (int i = offset + width - 1; i >= offset; i--) {
            out[i] = (byte) ('0' + value % 10);
            value /= 10;
        }
    }

    private static int digits(long value) {
        return Long.toString(value).length();
    }

    private String describeLayout() {
        return timestampBits + "/" + nodeBits + "/" + sequenceBits + " bits since " + epoch;
    }

    /** Builds a {@link MessageIdFormat}. Each setter validates its value at once, the bit budget in {@link #build()}. */
    public static final class Builder {
        private Instant epoch = Instant.parse(DEFAULT_EPOCH);
        private int timestampBits = 41;
        private int nodeBits = 10;
        private int sequenceBits = 12;
        private ZoneId zone = ZoneOffset.UTC;

        private Builder() {}

        /** Where the long form's milliseconds count from: a whole millisecond, not before 1970. Default 2024. */
        public Builder epoch(Instant epoch) {
            Objects.requireNonNull(epoch, "epoch");
            if (epoch.isBefore(Instant.EPOCH)
                    || !epoch.truncatedTo(ChronoUnit.MILLIS).equals(epoch)) {
                throw new ConfigurationException(
                        "id epoch " + epoch + " must be a whole millisecond not before 1970-01-01T00:00:00Z");
            }
            this.epoch = epoch;
            return this;
        }

        /** Bits of milliseconds since the epoch, at least 1. Default 41 (69 years). */
        public Builder timestampBits(int bits) {
            this.timestampBits = bits("timestampBits", bits, 63);
            return this;
        }

        /** Bits of node id, 1 to 31. Default 10 (node ids 0 to 1023). */
        public Builder nodeBits(int bits) {
            this.nodeBits = bits("nodeBits", bits, 31);
            return this;
        }

        /** Bits of per-millisecond sequence, 1 to 31. Default 12 (4,096 ids per millisecond per node). */
        public Builder sequenceBits(int bits) {
            this.sequenceBits = bits("sequenceBits", bits, 31);
            return this;
        }

        /**
         * The zone of the string form's timestamp; it must have a fixed offset (e.g. {@code ZoneOffset.ofHours(8)}),
         * since a daylight-saving zone repeats an hour of local times and would repeat ids. Default UTC.
         */
        public Builder zone(ZoneId zone) {
            Objects.requireNonNull(zone, "zone");
            if (!zone.getRules().isFixedOffset()) {
                throw new ConfigurationException("zone " + zone
                        + " changes its offset (daylight saving or history): local times can repeat, and so could"
                        + " string ids; use a fixed offset such as ZoneOffset.ofHours(8) or UTC");
            }
            this.zone = zone;
            return this;
        }

        public MessageIdFormat build() {
            int sum = timestampBits + nodeBits + sequenceBits;
            if (sum > 63) {
                throw new ConfigurationException("timestampBits + nodeBits + sequenceBits = " + timestampBits + " + "
                        + nodeBits + " + " + sequenceBits + " = " + sum + ", more than the 63 bits of a positive long;"
                        + " shrink one of them (defaults 41/10/12)");
            }
            return new MessageIdFormat(this);
        }

        private static int bits(String name, int value, int max) {
            if (value < 1 || value > max) {
                throw new ConfigurationException(name + " must be 1 to " + max + ", got " + value);
            }
            return value;
        }
    }
}
