package dev.idem.nats;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.KeyBytes;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class HeaderKeysTest {
    private static final List<byte[]> KEYS = List.of(
            utf8("10086:PAY"),
            utf8("hex:6b2d"), // text that looks like the binary form
            utf8("pay 1"), // a space: a header parser may trim it
            utf8("订单-1"), // valid UTF-8, not ASCII
            new byte[] {'k', '-', (byte) 0xFE},
            new byte[] {'k', '-', (byte) 0xFF},
            new byte[] {'k', '\t', '1'});

    @Test
    void everyKey_travelsAsPrintableAscii_andReadsBackAsItsExactKey() {
        for (byte[] key : KEYS) {
            String value = HeaderKeys.encode(key);
            assertThat(value).matches("[\\x21-\\x7e]+");
            assertThat(HeaderKeys.decode(value)).isEqualTo(KeyBytes.exactKey(key));
        }
    }

    @Test
    void printableAsciiKeys_travelAsThemselves_theOthersInHex() {
        assertThat(HeaderKeys.encode(utf8("10086:PAY"))).isEqualTo("10086:PAY");
        assertThat(HeaderKeys.encode(new byte[] {'k', '-', (byte) 0xFE})).isEqualTo("hex:6b2dfe");
        assertThat(HeaderKeys.encode(utf8("hex:6b2d"))).isEqualTo("hex:6865783a36623264");
    }

    @Test
    void aValueWithThePrefixButNoHex_isText() {
        assertThat(HeaderKeys.decode("hex:zz")).isEqualTo(KeyBytes.exactKey(utf8("hex:zz")));
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
