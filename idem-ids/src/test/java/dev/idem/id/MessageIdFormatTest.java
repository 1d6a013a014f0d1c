package dev.idem.id;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.ConfigurationException;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class MessageIdFormatTest {
    private final MessageIdFormat format = MessageIdFormat.defaults();

    @Test
    void defaults_are41TimestampBits10NodeBits12SequenceBitsSince2024() {
        assertThat(format.timestampBits()).isEqualTo(41);
        assertThat(format.nodeBits()).isEqualTo(10);
        assertThat(format.sequenceBits()).isEqualTo(12);
        assertThat(format.epoch()).isEqualTo(Instant.parse("2024-01-01T00:00:00Z"));
        assertThat(format.maxNodeId()).isEqualTo(1023);
        assertThat(format.maxSequence()).isEqualTo(4095);
        assertThat(format.sequenceDigits()).isEqualTo(4);
        assertThat(format.lastTimestamp()).isEqualTo(Instant.parse("2093-09-06T15:47:35.551Z"));
        assertThat(format.zone()).isEqualTo(ZoneOffset.UTC);
    }

    @Test
    void documentedExample_parsesIntoItsParts() {
        ParsedStringId parsed = format.parse("ORDER_20240115143000123_NODE01_0001");

        assertThat(parsed).isEqualTo(new ParsedStringId("ORDER", Instant.parse("2024-01-15T14:30:00.123Z"), 1, 1));
    }

    @Test
    void longId_placesTimestampNodeAndSequenceInTheirBits() {
        long id = format.longId(Instant.parse("2024-01-01T00:00:00.003Z"), 5, 7);

        assertThat(id).isEqualTo(3L << 22 | 5L << 12 | 7);
        assertThat(format.parse(id)).isEqualTo(new ParsedLongId(Instant.parse("2024-01-01T00:00:00.003Z"), 5, 7));
    }

    @Test
    void stringId_inFixedOffsetZone_showsLocalTime_andParsesBackToTheSameInstant() {
        MessageIdFormat shanghai =
                MessageIdFormat.builder().zone(ZoneOffset.ofHours(8)).build();
        Instant t = Instant.parse("2024-01-15T14:30:00.123Z");

        String id = shanghai.stringId("PAY", t, 3, 42);

        assertThat(id).isEqualTo("PAY_20240115223000123_NODE03_0042");
        assertThat(shanghai.parse(id).timestamp()).isEqualTo(t);
    }

    @Test
    void wideNodeIdsAndSequences_growTheirDigits() {
        MessageIdFormat wide = MessageIdFormat.builder()
                .timestampBits(30)
                .nodeBits(12)
                .sequenceBits(20)
                .build();
        Instant t = Instant.parse("2024-01-01T00:00:01Z");

        assertThat(wide.sequenceDigits()).isEqualTo(7);
        assertThat(wide.stringId("A", t, 4095, 3)).isEqualTo("A_20240101000001000_NODE4095_0000003");
    }

    @Test
    void zoneWithDaylightSaving_isRefused_becauseLocalTimesRepeat() {
        assertThatThrownBy(() -> MessageIdFormat.builder().zone(ZoneId.of("Europe/Paris")))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("Europe/Paris")
                .hasMessageContaining("fixed offset");
    }

    @Test
    void bitBudgetOver63_isRefusedWithTheSum() {
        assertThatThrownBy(() -> MessageIdFormat.builder()
                        .timestampBits(42)
                        .nodeBits(10)
                        .sequenceBits(12)
                        .build())
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("= 64");
    }

    @Test
    void widthsOutOfRange_areRefusedAtOnce() {
        assertThatThrownBy(() -> MessageIdFormat.builder().timestampBits(0)).isInstanceOf(ConfigurationException.class);
        assertThatThrownBy(() -> MessageIdFormat.builder().nodeBits(0)).isInstanceOf(ConfigurationException.class);
        assertThatThrownBy(() -> MessageIdFormat.builder().nodeBits(32)).isInstanceOf(ConfigurationException.class);
        assertThatThrownBy(() -> MessageIdFormat.builder().sequenceBits(32))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("sequenceBits must be 1 to 31");
    }

    @Test
    void epochFinerThanAMillisecondOrBefore1970_isRefused() {
        assertThatThrownBy(() -> MessageIdFormat.builder().epoch(Instant.parse("2024-01-01T00:00:00.000001Z")))
                .isInstanceOf(ConfigurationException.class);
        assertThatThrownBy(() -> MessageIdFormat.builder().epoch(Instant.parse("1969-12-31T00:00:00Z")))
                .isInstanceOf(ConfigurationException.class);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "order", "OR_DER", "1ORDER", "ORDER-1", "ABCDEFGHIJKLMNOPQ"})
    void invalidPrefix_isRefusedWithTheRule(String prefix) {
        assertThatThrownBy(() -> MessageIdFormat.validatePrefix(prefix))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("prefix '" + prefix + "' is not valid");
    }

    @Test
    void prefixWithSeparator_isRefused_sayingWhy() {
        assertThatThrownBy(() -> MessageIdFormat.validatePrefix("OR_DER"))
                .hasMessageContaining("'_' separates the parts of the id");
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "ORDER",
                "order_20240115143000123_NODE01_0001",
                "ORDER_2024011514300012_NODE01_0001",
                "ORDER_20241315143000123_NODE01_0001",
                "ORDER_20240115143000123_NOD01_0001",
                "ORDER_20240115143000123_NODE01",
                "ORDER_20240115143000123_NODE1_0001",
                "ORDER_20240115143000123_NODE01_001",
                "ORDER_20240115143000123_NODE01_00001",
                "ORDER_20240115143000123_NODE1024_0001",
                "ORDER_20240115143000123_NODE01_4096",
                "ORDER_20240115143000123_NODE01_00x1",
                "ORDER_20231231235959999_NODE01_0001",
                "ORDER_20240115143000123_NODE01_0001_",
            })
    void malformedStringId_isRefusedWithTheProblem(String id) {
        assertThatThrownBy(() -> format.parse(id))
                .isInstanceOf(InvalidMessageIdException.class)
                .hasMessageStartingWith("message id '" + id + "' is not valid: ")
                .hasMessageContaining("expected e.g. ORDER_20240115143000123_NODE01_0001");
    }

    @Test
    void nonCanonicalPadding_isRefused_showingTheCanonicalForm() {
        assertThatThrownBy(() -> format.parse("ORDER_20240115143000123_NODE001_0001"))
                .hasMessageContaining("expected 'ORDER_20240115143000123_NODE01_0001'");
    }

    @Test
    void negativeLongId_isRefused() {
        assertThatThrownBy(() -> format.parse(-5L))
                .isInstanceOf(InvalidMessageIdException.class)
                .hasMessageContaining("negative");
    }

    @Test
    void longIdWithBitsAboveTheLayout_isRefused() {
        MessageIdFormat narrow = MessageIdFormat.builder()
                .timestampBits(30)
                .nodeBits(4)
                .sequenceBits(4)
                .build();

        assertThatThrownBy(() -> narrow.parse(1L << 40))
                .isInstanceOf(InvalidMessageIdException.class)
                .hasMessageContaining("bits set above bit 37");
    }

    @Test
    void partsOutsideTheLayout_areRefusedWhenComposing() {
        Instant t = Instant.parse("2024-02-01T00:00:00Z");
        assertThatThrownBy(() -> format.longId(t, 1024, 0)).hasMessageContaining("node id 1024");
        assertThatThrownBy(() -> format.longId(t, 0, 4096)).hasMessageContaining("sequence 4096");
        assertThatThrownBy(() -> format.longId(Instant.parse("2023-12-31T23:59:59Z"), 0, 0))
                .hasMessageContaining("outside this format's range");
    }

    @Property(tries = 500)
    void everyLongId_parsesBackToItsParts(@ForAll("layoutsAndParts") LayoutAndParts p) {
        long id = p.format().longId(p.timestamp(), p.nodeId(), p.sequence());

        assertThat(id).isNotNegative();
        assertThat(p.format().parse(id)).isEqualTo(new ParsedLongId(p.timestamp(), p.nodeId(), p.sequence()));
    }

    @Property(tries = 500)
    void everyStringId_parsesBackToItsParts(@ForAll("layoutsAndParts") LayoutAndParts p) {
        String id = p.format().stringId(p.prefix(), p.timestamp(), p.nodeId(), p.sequence());

        assertThat(p.format().parse(id))
                .isEqualTo(new ParsedStringId(p.prefix(), p.timestamp(), p.nodeId(), p.sequence()));
    }

    record LayoutAndParts(MessageIdFormat format, String prefix, Instant timestamp, int nodeId, int sequence) {}

    @Provide
    Arbitrary<LayoutAndParts> layoutsAndParts() {
        Arbitrary<MessageIdFormat> formats = Combinators.combine(
                        Arbitraries.integers().between(36, 45),
                        Arbitraries.integers().between(1, 8),
                        Arbitraries.integers().between(1, 10),
                        Arbitraries.integers().between(-12, 14))
                .as((t, n, s, offsetHours) -> MessageIdFormat.builder()
                        .timestampBits(t)
                        .nodeBits(n)
                        .sequenceBits(s)
                        .zone(ZoneOffset.ofHours(offsetHours))
                        .build());
        Arbitrary<String> prefixes = Combinators.combine(
                        Arbitraries.chars().range('A', 'Z'),
                        Arbitraries.strings()
                                .withCharRange('A', 'Z')
                                .withCharRange('0', '9')
                                .ofMaxLength(MessageIdFormat.MAX_PREFIX_LENGTH - 1))
                .as((first, rest) -> first + rest);
        return formats.flatMap(f -> Combinators.combine(
                        prefixes,
                        Arbitraries.longs()
                                .between(
                                        0,
                                        f.lastTimestamp().toEpochMilli()
                                                - f.epoch().toEpochMilli()),
                        Arbitraries.integers().between(0, f.maxNodeId()),
                        Arbitraries.integers().between(0, f.maxSequence()))
                .as((prefix, offset, node, seq) ->
                        new LayoutAndParts(f, prefix, f.epoch().plusMillis(offset), node, seq)));
    }
}
